import type { PresenceMessage } from '../../core/types'
import { setData } from './data'

/** Wire form of a presence message (REST presence, realtime PRESENCE and SYNC). */
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
