import { toBase64 } from '../../lib/encoding'
import type { Message } from '../../core/types'
import { versionToWire } from './message'

/** The `data` of a message as event-stream text: binary base64-encoded, none as empty. */
export const rawData = (m: Message): string => (m.data instanceof Uint8Array ? toBase64(m.data) : (m.data ?? ''))

/**
 * Enveloped JSON of a log entry: the wire message (or, for a presence event, the wire
 * PresenceMessage with its numeric action) plus `channel`; binary data base64-encoded. A change of
 * a message (update, delete, append) is the message's serial and creation time with its action and
 * `version`, as the realtime protocol delivers it.
 */
export function envelopedJson(m: Message, channel: string): string {
  const o: Record<string, unknown> = { id: m.id, timestamp: m.mutation?.timestamp ?? m.timestamp, channel }
  if (m.kind === 'presence') {
    o.action = m.action
    o.connectionId = m.connectionId
  }
  if (m.name !== undefined) o.name = m.name
  if (m.data !== undefined) o.data = rawData(m)
  const encoding = m.data instanceof Uint8Array ? (m.encoding ? `${m.encoding}/base64` : 'base64') : m.encoding
  if (encoding) o.encoding = encoding
  if (m.clientId !== undefined) o.clientId = m.clientId
  if (m.extras !== undefined) o.extras = m.extras
  if (!m.kind) o.serial = m.serial
  if (m.mutation) {
    o.serial = m.mutation.serial
    o.action = m.action
    o.version = versionToWire(m)
  }
  return JSON.stringify(o)
}
