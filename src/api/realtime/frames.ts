import { Packr } from 'msgpackr'
import {
  Action,
  presenceFromEntry,
  type DeliveryFilter,
  type Message,
  type PresenceMessage,
  type ProtocolMessage,
} from '../../core/connections'
import { GatewayError } from '../../errors'
import { messageToWire } from '../wire/message'
import { presenceToWire } from '../wire/presence'
import { delivered } from './metrics'
import { jsonTooDeep } from '../../lib/nesting'
import { RecentMemo } from '../../lib/recent-memo'
import { NotPlainMsgpack, plainMsgpack } from '../../lib/plain-msgpack'
import { objectDelivery, syncForWire } from '../wire/object-message'
import { annotationsMessage, summariesMessage } from '../wire/annotation-messages'
import { packAck, type AckMessage } from '../wire/ack-frame'

/**
 * Frames of the realtime protocol: one WebSocket frame is one protocol message, a JSON text
 * frame (`format=json`) or a msgpack binary frame (`format=msgpack`, the default of the official
 * Node client). Fields that are absent are left out, never sent as null; zero stays zero.
 */
export type Format = 'json' | 'msgpack'
export type Frame = string | Uint8Array
/** A frame as the socket hands it over: text, or binary as an ArrayBuffer (the socket's `binaryType`). */
export type ClientFrame = string | ArrayBuffer

/** Plain msgpack maps (no msgpackr records: the clients' decoders do not know them). */
const packr = new Packr({ useRecords: false, moreTypes: false })

/** Deepest nesting a client frame may have (a frame is a map of arrays of messages of extras). */
const MAX_DEPTH = 64

export function encodeFrame(pm: object, format: Format): Frame {
  return format === 'json' ? JSON.stringify(pm) : packr.pack(pm)
}

/**
 * A protocol message of the connection in its wire form: a SYNC's members are the core's
 * presence messages (the other messages a connection sends are in their wire form already).
 */
export function encodeServerMessage(pm: object, format: Format): Frame {
  const action = (pm as { action?: number }).action
  // the frame a publishing connection is sent most: written by hand (wire/ack-frame.ts)
  if (action === Action.ACK && format === 'msgpack') {
    const bytes = packAck(pm as AckMessage)
    if (bytes) return bytes
  }
  // a LiveObjects sync: `bytes` values as the format carries them (wire/object-message.ts)
  if (action === Action.OBJECT_SYNC) return encodeFrame(syncForWire(pm, format === 'msgpack'), format)
  const sync = pm as { action?: number; presence?: PresenceMessage[] }
  if (sync.action !== Action.SYNC || !sync.presence) return encodeFrame(pm, format)
  const binary = format === 'msgpack'
  return encodeFrame({ ...pm, presence: sync.presence.map((m) => presenceToWire(m, binary)) }, format)
}

/**
 * A client frame as a protocol message; 40000 when it is not one (malformed, wrong frame type,
 * too deep, or a `channel` that is not a string: every answer about a channel names it, and a
 * client takes an ERROR naming no channel for the connection's).
 */
export function decodeFrame(raw: ClientFrame, format: Format): ProtocolMessage {
  const invalid = (why: string) => new GatewayError(40000, `Invalid protocol message: ${why}`)
  let value: unknown
  if (format === 'json') {
    if (typeof raw !== 'string') throw invalid('a binary frame on a JSON connection')
    if (jsonTooDeep(raw, MAX_DEPTH)) throw invalid(`nested deeper than ${MAX_DEPTH} levels`)
    try {
      value = JSON.parse(raw)
    } catch {
      throw invalid('not JSON')
    }
  } else {
    if (typeof raw === 'string') throw invalid('a text frame on a msgpack connection')
    value = plainMsgpack(new Uint8Array(raw), MAX_DEPTH)
    if (value instanceof NotPlainMsgpack)
      throw invalid(
        value.problem === 'too deep'
          ? `nested deeper than ${MAX_DEPTH} levels`
          : value.problem === 'extension'
            ? 'msgpack extension types are not accepted'
            : 'not msgpack',
      )
  }
  if (
    !value ||
    typeof value !== 'object' ||
    Array.isArray(value) ||
    typeof (value as { action?: unknown }).action !== 'number'
  )
    throw invalid('an object with a numeric action is required')
  const channel = (value as { channel?: unknown }).channel
  if (channel !== undefined && channel !== null && typeof channel !== 'string')
    throw invalid('channel must be a string')
  return value as ProtocolMessage
}

/** A frame of delivered entries: all of one kind, with the serial of its last entry. */
export interface DeliveryFrame {
  kind: 'message' | 'presence' | 'object' | 'annotation' | 'summary'
  /** The encoded frame. */
  frame: Frame
  /** The entries it carries (to tell a connection's own messages apart: echo). */
  entries: Message[]
  channelSerial: string
}

/**
 * The frames of one delivered batch, per format, kept by the batch: the hub hands the same array
 * to every subscriber of the channel for one event-loop turn, so each format is encoded once
 * however many sockets receive it (lib/recent-memo.ts). Consecutive entries of one kind share a
 * frame, so the channel order holds across messages and presence events. A frame names its
 * channel, and one batch can go out under several names (the channel, and filtered channels of
 * it whose filter let all of it through: fanout/channel-filters.ts), so the cache is per name;
 * the first name (nearly always the only one) is kept without a map.
 */
interface CachedFrames {
  channel: string
  byFormat: Partial<Record<Format, DeliveryFrame[]>>
  /** The batch's frames under other channel names. */
  others?: Map<string, Partial<Record<Format, DeliveryFrame[]>>>
}
const cache = new RecentMemo<Message[], CachedFrames>()

function framesOf(batch: Message[], channel: string): Partial<Record<Format, DeliveryFrame[]>> {
  const cached = cache.get(batch)
  if (!cached) return cache.set(batch, { channel, byFormat: {} }).byFormat
  if (cached.channel === channel) return cached.byFormat
  const others = (cached.others ??= new Map())
  let byFormat = others.get(channel)
  if (!byFormat) others.set(channel, (byFormat = {}))
  return byFormat
}

export function batchFrames(batch: Message[], channel: string, format: Format): DeliveryFrame[] {
  const byFormat = framesOf(batch, channel)
  let frames = byFormat[format]
  if (!frames) {
    frames = []
    let start = 0
    for (let i = 1; i <= batch.length; i++) {
      if (i < batch.length && (batch[i]!.kind ?? 'message') === (batch[start]!.kind ?? 'message')) continue
      frames.push(deliveryFrame(batch.slice(start, i), channel, format))
      start = i
    }
    byFormat[format] = frames
  }
  return frames
}

/** One frame of entries of one kind (all of `entries` share it). */
export function deliveryFrame(entries: Message[], channel: string, format: Format): DeliveryFrame {
  const binary = format === 'msgpack'
  const channelSerial = entries[entries.length - 1]!.serial
  // LiveObjects operations (wire/object-message.ts)
  if (entries[0]!.kind === 'object')
    return {
      kind: 'object',
      frame: encodeFrame(objectDelivery(entries, channel, binary), format),
      entries,
      channelSerial,
    }
  const kind = entries[0]!.kind
  if (kind === 'annotation' || kind === 'summary') {
    const pm = (kind === 'annotation' ? annotationsMessage : summariesMessage)(entries, channel, channelSerial)
    return { kind, frame: encodeFrame(pm, format), entries, channelSerial }
  }
  if (kind === 'presence') {
    const presence = entries.map((m) => presenceToWire(presenceFromEntry(m), binary))
    return {
      kind: 'presence',
      frame: encodeFrame({ action: Action.PRESENCE, channel, channelSerial, presence }, format),
      entries,
      channelSerial,
    }
  }
  const messages = entries.map((m) => messageToWire(m, binary))
  return {
    kind: 'message',
    frame: encodeFrame({ action: Action.MESSAGE, channel, channelSerial, messages }, format),
    entries,
    channelSerial,
  }
}

/**
 * Writes the frames of a delivered batch that `filter` lets through (from the batch's frame
 * cache; a frame with the connection's own messages is made again without them when it does not
 * want them back).
 */
export function writeBatch(
  batch: Message[],
  channel: string,
  format: Format,
  filter: DeliveryFilter,
  write: (frame: Frame) => void,
): void {
  for (const f of batchFrames(batch, channel, format)) {
    const wanted =
      f.kind === 'presence'
        ? filter.presence
        : f.kind === 'object'
          ? filter.objects
          : f.kind === 'annotation'
            ? filter.annotations
            : filter.messages
    if (!wanted) continue
    const except = filter.exceptConnection
    if (f.kind === 'message' && except !== undefined && f.entries.some((m) => m.connectionId === except)) {
      const others = f.entries.filter((m) => m.connectionId !== except)
      if (others.length) write(deliveryFrame(others, channel, format).frame)
      delivered.value += others.length
      continue
    }
    write(f.frame)
    delivered.value += f.entries.length
  }
}
