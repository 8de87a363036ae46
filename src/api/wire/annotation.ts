import type { Annotation } from '../../core/channels/ports'

/** An annotation as the wire carries it (REST lists, realtime ANNOTATION): absent fields left out. */
export function annotationToWire(a: Annotation, connectionId?: string): Record<string, unknown> {
  const o: Record<string, unknown> = {
    id: a.id,
    action: a.action,
    serial: a.serial,
    messageSerial: a.messageSerial,
    type: a.type,
    timestamp: a.timestamp,
  }
  if (a.name !== undefined) o.name = a.name
  if (a.count !== undefined) o.count = a.count
  if (a.clientId !== undefined) o.clientId = a.clientId
  if (connectionId !== undefined) o.connectionId = connectionId
  if (a.data !== undefined) o.data = a.data
  if (a.encoding !== undefined) o.encoding = a.encoding
  if (a.extras !== undefined) o.extras = a.extras
  return o
}
