import { toBase64, utf8Encode } from '../../lib/encoding'
import type { Message } from '../../core/types'
import type { ErrorBody } from '../../errors'

/**
 * Text of event-stream records. `sse`: W3C Server-Sent Events (`id`, `event`, `data` lines);
 * `ndjson`: the plain event stream, one JSON envelope per line. Payload JSON is built once per
 * message and variant, and shared by every connection that receives it.
 */
export type StreamMode = 'sse' | 'ndjson'

interface Cached { enveloped?: string; raw?: string; rawJson?: string }
const cache = new WeakMap<Message, Cached>()

const rawData = (m: Message): string => (m.data instanceof Uint8Array ? toBase64(m.data) : m.data ?? '')

/** Enveloped message JSON: the wire message plus `channel`; binary data base64-encoded. */
function envelopedJson(m: Message, channel: string): string {
  let c = cache.get(m)
  if (!c) cache.set(m, (c = {}))
  if (c.enveloped === undefined) {
    const o: Record<string, unknown> = { id: m.id, timestamp: m.timestamp, channel }
    if (m.name !== undefined) o.name = m.name
    if (m.data !== undefined) o.data = rawData(m)
    const encoding = m.data instanceof Uint8Array ? (m.encoding ? `${m.encoding}/base64` : 'base64') : m.encoding
    if (encoding) o.encoding = encoding
    if (m.clientId !== undefined) o.clientId = m.clientId
    if (m.extras !== undefined) o.extras = m.extras
    o.serial = m.serial
    c.enveloped = JSON.stringify(o)
  }
  return c.enveloped
}

function rawText(m: Message): string {
  let c = cache.get(m)
  if (!c) cache.set(m, (c = {}))
  return (c.raw ??= rawData(m))
}

/** SSE `data:` lines; a payload holding newlines is split over several lines as the standard requires. */
const dataLines = (text: string) => (text.includes('\n') || text.includes('\r') ? text.split(/\r\n|\r|\n/).join('\ndata: ') : text)

export function messageRecord(mode: StreamMode, enveloped: boolean, id: string, m: Message, channel: string): string {
  if (mode === 'sse') return `id: ${id}\nevent: message\ndata: ${dataLines(enveloped ? envelopedJson(m, channel) : rawText(m))}\n\n`
  const data = enveloped ? envelopedJson(m, channel) : JSON.stringify(rawText(m))
  return `{"event":"message","id":${JSON.stringify(id)},"data":${data}}\n`
}

/** Error events are never wrapped in `error`: the data is the error object itself. */
export function errorRecord(mode: StreamMode, err: ErrorBody): string {
  const data = JSON.stringify(err)
  return mode === 'sse' ? `event: error\ndata: ${data}\n\n` : `{"event":"error","data":${data}}\n`
}

const HEARTBEAT = { sse: utf8Encode('event: heartbeat\ndata: {}\n\n'), ndjson: utf8Encode('{"event":"heartbeat"}\n') }
const KEEPALIVE = utf8Encode('\n')

export const keepaliveBytes = (mode: StreamMode, heartbeats: boolean): Uint8Array => (heartbeats ? HEARTBEAT[mode] : KEEPALIVE)
