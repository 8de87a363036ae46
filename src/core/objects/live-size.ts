/**
 * Sizes of LiveObjects by the hosted service's rules, as the official client computes them
 * (ably-js `ObjectMessage.getMessageSize`, spec OM3, OOP4, OD3, MST3, MRM3, MCR3, CCR3, CIN3) and
 * as the hosted docs count a channel's objects (liveobjects/storage: a map is the length of its
 * keys plus the size of its values, a counter 8 bytes, tombstones not counted):
 * - a value: a string's or JSON text's UTF-8 bytes, binary its bytes, a number 8, a boolean 1, a
 *   reference to another object nothing;
 * - a map key its length (UTF-16 units, as the client counts it);
 * - an operation: its payload (a set's key and value, a remove's key, a create's entries, an
 *   increment or a counter's count 8); object ids, actions and nonces are not counted;
 * - an ObjectMessage: its operation (or state) and its `extras` as JSON text.
 * The server refuses a publish above `maxMessageSize` by this rule, so what the client's own
 * check lets through is never refused for its size (before, the JSON text of the operations was
 * counted: a set of a 65,527-character string was 65,615 bytes and refused).
 */
import { utf8Length } from '../../lib/encoding'
import type { MapEntry, ObjectData, Operation } from './ports'

/** Decoded length of base64 text. */
const base64Bytes = (b: string) => {
  let pad = 0
  if (b.endsWith('==')) pad = 2
  else if (b.endsWith('=')) pad = 1
  return Math.floor((b.length * 3) / 4) - pad
}

/** A value's size (OD3). */
export function dataSize(d: ObjectData | undefined): number {
  if (!d) return 0
  if (d.string !== undefined) return utf8Length(d.string)
  if (d.json !== undefined) return utf8Length(d.json)
  if (d.bytes !== undefined) return base64Bytes(d.bytes)
  if (d.number !== undefined) return 8
  if (d.boolean !== undefined) return 1
  return 0
}

/** A live map entry's size: its key and its value. */
export const entrySize = (key: string, d: ObjectData | undefined): number => key.length + dataSize(d)

/** The size of a map's entries (MCR3, OMP4): keys and the values of those that hold one. */
export function entriesSize(entries: Record<string, MapEntry> | undefined): number {
  let n = 0
  for (const [k, e] of Object.entries(entries ?? {})) n += entrySize(k, e.data)
  return n
}

/** An operation's size (OOP4). */
export function operationSize(op: Operation): number {
  if (op.mapSet) return entrySize(op.mapSet.key, op.mapSet.value)
  if (op.mapRemove) return op.mapRemove.key.length
  if (op.mapCreate) return entriesSize(op.mapCreate.entries)
  if (op.counterCreate || op.counterInc) return 8
  return 0
}

/** An ObjectMessage's size (OM3): its operation and its extras as JSON text. */
export const objectMessageSize = (op: Operation, extras?: Record<string, unknown>): number =>
  operationSize(op) + (extras ? JSON.stringify(extras).length : 0)
