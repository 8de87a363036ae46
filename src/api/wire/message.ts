import type { Message } from '../../core/types'
import { setData } from './data'

/**
 * Wire form of stored messages (REST history, realtime MESSAGE; `data` as `setData` writes it).
 * A version of a message (an entry of kind `mutation`, or a message in its latest version) shows the
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
