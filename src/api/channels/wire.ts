import { toBase64 } from '../../lib/encoding'
import type { Message, PresenceMessage } from '../../core/types'

/**
 * Wire form of stored messages. Binary data stays binary in msgpack; in text formats it is
 * base64-encoded and `base64` is appended to the encoding, as the hosted service does.
 */
export function messageToWire(m: Message, binary: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = { id: m.id, timestamp: m.timestamp, serial: m.serial, action: m.action ?? 0 }
  if (m.name !== undefined) out.name = m.name
  if (m.clientId !== undefined) out.clientId = m.clientId
  if (m.connectionId !== undefined) out.connectionId = m.connectionId
  if (m.extras !== undefined) out.extras = m.extras
  setData(out, m.data, m.encoding, binary)
  return out
}

export function presenceToWire(p: PresenceMessage, binary: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = { id: p.id, action: p.action, clientId: p.clientId, connectionId: p.connectionId, timestamp: p.timestamp }
  if (p.extras !== undefined) out.extras = p.extras
  setData(out, p.data, p.encoding, binary)
  return out
}

function setData(out: Record<string, unknown>, data: string | Uint8Array | undefined, encoding: string | undefined, binary: boolean) {
  if (data instanceof Uint8Array && !binary) {
    out.data = toBase64(data)
    out.encoding = encoding ? `${encoding}/base64` : 'base64'
    return
  }
  if (data !== undefined) out.data = data
  if (encoding) out.encoding = encoding
}
