import { toBase64, utf8Encode } from '../../lib/encoding'
import type { Message } from '../../core/types'
import type { ErrorBody } from '../../errors'

/**
 * Text of event-stream records. `sse`: W3C Server-Sent Events (`id`, `event`, `data` lines);
 * `ndjson`: the plain event stream, one JSON envelope per line. Payload JSON is built once per
 * batch and variant, and shared by every connection that receives it.
 */
export type StreamMode = 'sse' | 'ndjson'

const rawData = (m: Message): string => (m.data instanceof Uint8Array ? toBase64(m.data) : m.data ?? '')

/** Enveloped message JSON: the wire message plus `channel`; binary data base64-encoded. */
function envelopedJson(m: Message, channel: string): string {
  const o: Record<string, unknown> = { id: m.id, timestamp: m.timestamp, channel }
  if (m.name !== undefined) o.name = m.name
  if (m.data !== undefined) o.data = rawData(m)
  const encoding = m.data instanceof Uint8Array ? (m.encoding ? `${m.encoding}/base64` : 'base64') : m.encoding
  if (encoding) o.encoding = encoding
  if (m.clientId !== undefined) o.clientId = m.clientId
  if (m.extras !== undefined) o.extras = m.extras
  o.serial = m.serial
  return JSON.stringify(o)
}

/** SSE `data:` lines; a payload holding newlines is split over several lines as the standard requires. */
const dataLines = (text: string) => (text.includes('\n') || text.includes('\r') ? text.split(/\r\n|\r|\n/).join('\ndata: ') : text)

type Variant = 'enveloped' | 'sse' | 'ndjson'

/**
 * Payloads of a batch per variant, keyed by the batch array: the hub hands one array to every
 * subscriber of the channel for one event-loop turn, so it is serialized once however many
 * connections receive it, and the cache dies with the turn. Never cache per message: a weak map
 * keyed by messages that the history ring keeps alive made garbage-collection pauses reach 50 ms
 * under load (accounts benchmark).
 */
const cache = new WeakMap<Message[], Partial<Record<Variant, string[]>>>()

/** The `data` of each message of `batch` as `mode` and `enveloped` ask (JSON text never holds a raw line break). */
export function payloads(batch: Message[], channel: string, mode: StreamMode, enveloped: boolean): string[] {
  const variant: Variant = enveloped ? 'enveloped' : mode
  let byVariant = cache.get(batch)
  if (!byVariant) cache.set(batch, (byVariant = {}))
  let out = byVariant[variant]
  if (!out) {
    out = new Array<string>(batch.length)
    for (let i = 0; i < batch.length; i++) {
      const m = batch[i]!
      out[i] = enveloped ? envelopedJson(m, channel) : mode === 'sse' ? dataLines(rawData(m)) : JSON.stringify(rawData(m))
    }
    byVariant[variant] = out
  }
  return out
}

/** One message record around a payload from `payloads`. */
export function messageRecord(mode: StreamMode, id: string, payload: string): string {
  return mode === 'sse' ? `id: ${id}\nevent: message\ndata: ${payload}\n\n` : `{"event":"message","id":${JSON.stringify(id)},"data":${payload}}\n`
}

/** Error events are never wrapped in `error`: the data is the error object itself. */
export function errorRecord(mode: StreamMode, err: ErrorBody): string {
  const data = JSON.stringify(err)
  return mode === 'sse' ? `event: error\ndata: ${data}\n\n` : `{"event":"error","data":${data}}\n`
}

const HEARTBEAT = { sse: utf8Encode('event: heartbeat\ndata: {}\n\n'), ndjson: utf8Encode('{"event":"heartbeat"}\n') }
const KEEPALIVE = utf8Encode('\n')

export const keepaliveBytes = (mode: StreamMode, heartbeats: boolean): Uint8Array => (heartbeats ? HEARTBEAT[mode] : KEEPALIVE)
