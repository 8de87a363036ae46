import { toBase64 } from '../../lib/encoding'
import type { PublishResponse } from '../../core/channels/publisher'
import type { BatchResult, Message, PresenceMessage } from '../../core/types'

/**
 * Wire form of stored messages. Binary data stays binary in msgpack; in text formats it is
 * base64-encoded and `base64` is appended to the encoding, as the hosted service does. A version
 * of a message (an entry of kind `mutation`, or a message in its latest version) shows the
 * message's serial and creation time, and its own serial, time and operation as `version`.
 */
export function messageToWire(m: Message, binary: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = m.mutation
    ? { id: m.id, timestamp: m.mutation.timestamp, serial: m.mutation.serial, action: m.action ?? 0 }
    : { id: m.id, timestamp: m.timestamp, serial: m.serial, action: m.action ?? 0 }
  if (m.mutation) out.version = versionToWire(m)
  else if (m.version) out.version = m.version
  if (m.name !== undefined) out.name = m.name
  if (m.clientId !== undefined) out.clientId = m.clientId
  if (m.connectionId !== undefined) out.connectionId = m.connectionId
  if (m.extras !== undefined) out.extras = m.extras
  if (m.annotations !== undefined) out.annotations = m.annotations
  setData(out, m.data, m.encoding, binary)
  return out
}

/** `version` of a change entry: its serial and time, and who changed the message and why. */
export function versionToWire(m: Message): Record<string, unknown> {
  const { clientId, description, metadata } = m.mutation!
  const v: Record<string, unknown> = { serial: m.serial, timestamp: m.timestamp }
  if (clientId !== undefined) v.clientId = clientId
  if (description !== undefined) v.description = description
  if (metadata !== undefined) v.metadata = metadata
  return v
}

export function presenceToWire(p: PresenceMessage, binary: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: p.id,
    action: p.action,
    clientId: p.clientId,
    connectionId: p.connectionId,
    timestamp: p.timestamp,
  }
  if (p.extras !== undefined) out.extras = p.extras
  setData(out, p.data, p.encoding, binary)
  return out
}

function setData(
  out: Record<string, unknown>,
  data: string | Uint8Array | undefined,
  encoding: string | undefined,
  binary: boolean,
) {
  if (data instanceof Uint8Array && !binary) {
    out.data = toBase64(data)
    out.encoding = encoding ? `${encoding}/base64` : 'base64'
    return
  }
  if (data !== undefined) out.data = data
  if (encoding) out.encoding = encoding
}

/**
 * The protocol version a request states (`X-Ably-Version`, or the `v` query parameter); undefined
 * when it states none or something that is not a number.
 */
export function protocolVersion(request: Request, query: Record<string, string | undefined>): number | undefined {
  const raw = request.headers.get('x-ably-version') ?? query.v
  const v = raw === null || raw === undefined || raw === '' ? NaN : Number(raw)
  return Number.isFinite(v) ? v : undefined
}

/**
 * Batch publish results in the form the request's protocol version reads: before version 3 one
 * flat array over every spec of `{channel, messageId}` or `{channel, error}`; from version 3 on
 * (and when no version is stated) one BatchResult per spec, as the client libraries of today read it.
 */
export function batchPublishToWire(results: BatchResult<PublishResponse>[], version: number | undefined): unknown {
  if (version === undefined || version >= 3) return results
  return results.flatMap((r) =>
    r.results.map((x) => ('error' in x ? x : { channel: x.channel, messageId: x.messageId })),
  )
}
