import { utf8Encode } from '../../lib/encoding'
import type { Message } from '../../core/types'
import type { ErrorBody } from '../../errors'
import { envelopedJson, rawData } from '../wire/enveloped'
import { RecentMemo } from '../../lib/recent-memo'

/**
 * Text of event-stream records. `sse`: W3C Server-Sent Events (`id`, `event`, `data` lines);
 * `ndjson`: the plain event stream, one JSON envelope per line. Payload JSON is built once per
 * batch and variant, and shared by every connection that receives it.
 */
export type StreamMode = 'sse' | 'ndjson'

const filtered = new WeakMap<Message[], Message[]>()
const notStreamed = (m: Message) => m.kind === 'annotation' || m.kind === 'summary' || m.kind === 'object'

/**
 * The entries of a batch an event stream carries: annotations, summaries and LiveObjects
 * operations are realtime deliveries only (not served on event streams). The batch itself when it holds none (the
 * common case); else its filtered copy, made once per batch.
 */
export function streamed(batch: Message[]): Message[] {
  if (!batch.some(notStreamed)) return batch
  let out = filtered.get(batch)
  if (!out) filtered.set(batch, (out = batch.filter((m) => !notStreamed(m))))
  return out
}

/** SSE `data:` lines; a payload holding newlines is split over several lines as the standard requires. */
const dataLines = (text: string) =>
  text.includes('\n') || text.includes('\r') ? text.split(/\r\n|\r|\n/).join('\ndata: ') : text

type Variant = 'enveloped' | 'sse' | 'ndjson'

/**
 * Payloads of a batch per variant, kept by the batch array: the hub hands one array to every
 * subscriber of the channel for one event-loop turn, so it is serialized once however many
 * connections receive it (lib/recent-memo.ts). Never cache per message: a weak map keyed by
 * messages that the history ring keeps alive made garbage-collection pauses reach 50 ms under
 * load (accounts benchmark).
 */
const cache = new RecentMemo<Message[], Partial<Record<Variant, string[]>>>()

/** The `data` of each message of `batch` as `mode` and `enveloped` ask (JSON text never holds a raw line break). */
export function payloads(batch: Message[], channel: string, mode: StreamMode, enveloped: boolean): string[] {
  const variant: Variant = enveloped ? 'enveloped' : mode
  const byVariant = cache.get(batch) ?? cache.set(batch, {})
  let out = byVariant[variant]
  if (!out) {
    out = new Array<string>(batch.length)
    for (let i = 0; i < batch.length; i++) {
      const m = batch[i]!
      out[i] = enveloped
        ? envelopedJson(m, channel)
        : mode === 'sse'
          ? dataLines(rawData(m))
          : JSON.stringify(rawData(m))
    }
    byVariant[variant] = out
  }
  return out
}

/** The record of a log entry (event `presence` for presence events, else `message`) around a payload from `payloads`. */
export function entryRecord(mode: StreamMode, id: string, m: Message, payload: string): string {
  const event = m.kind === 'presence' ? 'presence' : 'message'
  return mode === 'sse'
    ? `id: ${id}\nevent: ${event}\ndata: ${payload}\n\n`
    : `{"event":"${event}","id":${JSON.stringify(id)},"data":${payload}}\n`
}

/** Error events are never wrapped in `error`: the data is the error object itself. */
export function errorRecord(mode: StreamMode, err: ErrorBody): string {
  const data = JSON.stringify(err)
  return mode === 'sse' ? `event: error\ndata: ${data}\n\n` : `{"event":"error","data":${data}}\n`
}

const HEARTBEAT = { sse: utf8Encode('event: heartbeat\ndata: {}\n\n'), ndjson: utf8Encode('{"event":"heartbeat"}\n') }
const KEEPALIVE = utf8Encode('\n')

export const keepaliveBytes = (mode: StreamMode, heartbeats: boolean): Uint8Array =>
  heartbeats ? HEARTBEAT[mode] : KEEPALIVE
