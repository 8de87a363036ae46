import { Packr } from 'msgpackr'
import { parseSerial } from '../../core/model/serial'
import type { Message, MessageDraft } from '../../core/types'
import { NotPlainMsgpack, plainMsgpack } from '../../lib/plain-msgpack'
import { latin1Slice } from '../../lib/encoding'

/** How messages are encoded in Redis (msgpack) and how stream ids map to serials. */
const packr = new Packr({ useRecords: false })

/** The stored body: everything but serial and timestamp, which the stream id carries. */
export function packDraft(d: MessageDraft): Buffer {
  // a draft rarely carries a timestamp (none from a client): packed as it is, no copy
  if (!('timestamp' in d)) return packr.pack(d)
  const { timestamp: _t, ...rest } = d
  return packr.pack(rest)
}

export function messageFromEntry(id: string, body: Uint8Array): Message {
  return messageAt(serialFromId(id), id, body)
}

const ZEROS = '00000000000000'

/**
 * The serial of a stream id (`<ms>-<seq>`, decimal without leading zeros as Redis writes them):
 * `formatSerial(ms, seq)` made by padding the text, with no number parsed (it runs for every id
 * of every publish and notification).
 */
export const serialFromId = (id: string): string => {
  const i = id.indexOf('-')
  const seq = id.length - i - 1
  return (i < 14 ? ZEROS.slice(i) : '') + (seq < 6 ? id.slice(0, i + 1) + ZEROS.slice(8 + seq) + id.slice(i + 1) : id)
}

export function idFromSerial(serial: string): string {
  const p = parseSerial(serial)
  return p ? `${p.ms}-${p.seq}` : '0-0'
}

export const pack = (v: unknown): Buffer => packr.pack(v)
export const unpack = <T>(b: Uint8Array): T => packr.unpack(b) as T

/**
 * Notification payload written by the publish script: `<prev id> ` then, per new message,
 * `<id> <body length> <body>`. Returns the previous entry's serial and the messages in order;
 * with `after`, only the messages past that serial are decoded (the others, which the node
 * already holds, are skipped by their length).
 */
export function parseNotification(buf: Buffer, after?: string): { prev: string; messages: Message[] } {
  const n = buf.length
  // tokens read in place: the ids as latin1 text (what they are), lengths as digits (no string made)
  let end = tokenEnd(buf, 0)
  const prev = serialFromId(latin1Slice(buf, 0, end))
  let pos = end + 1
  const messages: Message[] = []
  while (pos < n) {
    end = tokenEnd(buf, pos)
    const id = latin1Slice(buf, pos, end)
    pos = end + 1
    let len = 0
    for (let c = buf[pos]; pos < n && c !== 0x20; c = buf[++pos]) len = len * 10 + c! - 0x30
    pos++
    const serial = serialFromId(id)
    if (after === undefined || serial > after) messages.push(messageAt(serial, id, buf.subarray(pos, pos + len)))
    pos += len
  }
  return { prev, messages }
}

/** Where the space-ended token from `from` ends (the buffer's length when no space follows). */
function tokenEnd(buf: Uint8Array, from: number): number {
  let i = from
  while (i < buf.length && buf[i] !== 0x20) i++
  return i
}

/**
 * Whether the notification `buf` (as `parseNotification` reads it) is well formed and its last
 * message's stream id is `id`. Read in place: no string, no Buffer made (a node passes over the
 * notification of what it already delivered with it).
 */
export function endsWithId(buf: Uint8Array, id: string): boolean {
  const n = buf.length
  const first = tokenEnd(buf, 0)
  if (first === n) return false
  let pos = first + 1
  let from = -1
  let to = -1
  while (pos < n) {
    from = pos
    to = tokenEnd(buf, pos)
    pos = to + 1
    let len = 0
    let digits = 0
    for (let c = buf[pos]; pos < n && c !== 0x20; c = buf[++pos]) {
      if (c === undefined || c < 0x30 || c > 0x39 || ++digits > 10) return false
      len = len * 10 + c - 0x30
    }
    if (digits === 0 || pos >= n) return false
    pos += 1 + len
  }
  if (pos !== n || to - from !== id.length) return false
  for (let i = 0; i < id.length; i++) if (buf[from + i] !== id.charCodeAt(i)) return false
  return true
}

/** Nesting a stored body may have: it was checked when it was published, against a lower bound. */
const STORED_DEPTH = 256

/**
 * A stored body as its message, given its serial and stream id: read by the reader of bodies and
 * frames (lib/plain-msgpack.ts; msgpackr would make an N-API call for each body of 140 bytes or
 * more), msgpackr only for a body that reader refuses, which the gateway never stores.
 */
function messageAt(serial: string, id: string, body: Uint8Array): Message {
  const read = plainMsgpack(body, STORED_DEPTH)
  const m = (read instanceof NotPlainMsgpack ? packr.unpack(body) : read) as Message
  m.serial = serial
  m.timestamp = Number(id.slice(0, id.indexOf('-')))
  return m
}
