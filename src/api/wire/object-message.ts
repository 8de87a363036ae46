import { Action, SITE_CODE, type MapEntry, type Message, type ObjectData } from '../../core/connections'
import { fromBase64 } from '../../lib/encoding'

/**
 * OBJECT and OBJECT_SYNC frames (shared/reference/ably-liveobjects.md §3, §4, §8). Operations and
 * states are kept in the JSON wire form; msgpack carries `bytes` values as binary.
 */

const binaryData = (d: ObjectData | undefined) => {
  if (d?.bytes !== undefined) (d as { bytes: unknown }).bytes = fromBase64(d.bytes)
}
const binaryEntries = (entries: Record<string, MapEntry> | undefined) => {
  for (const e of Object.values(entries ?? {})) binaryData(e.data)
}

/** An operation (JSON wire form, freshly parsed) as `format` carries it. */
function operationFor(op: Record<string, any>, binary: boolean) {
  if (binary) {
    binaryData(op.mapSet?.value)
    binaryEntries(op.mapCreate?.entries)
  }
  return op
}

/** The ObjectMessage of a log entry of kind `object`. */
function objectMessage(m: Message, binary: boolean): Record<string, unknown> {
  const om: Record<string, unknown> = {
    id: m.id,
    timestamp: m.timestamp,
    serial: m.serial,
    serialTimestamp: m.timestamp,
    siteCode: SITE_CODE,
    operation: operationFor(JSON.parse(m.data as string), binary),
  }
  if (m.clientId !== undefined) om.clientId = m.clientId
  if (m.connectionId !== undefined) om.connectionId = m.connectionId
  if (m.extras !== undefined) om.extras = m.extras
  return om
}

/** The OBJECT protocol message of consecutive operations of a channel (the publisher receives it too). */
export function objectDelivery(entries: Message[], channel: string, binary: boolean): object {
  const channelSerial = entries[entries.length - 1]!.serial
  return { action: Action.OBJECT, channel, channelSerial, state: entries.map((m) => objectMessage(m, binary)) }
}

/** An OBJECT_SYNC as the connection hands it over (JSON wire form) for `binary`: `bytes` values as binary. */
export function syncForWire(pm: { state?: Array<{ object?: Record<string, any> }> }, binary: boolean): object {
  if (!binary || !pm.state) return pm
  for (const m of pm.state) {
    binaryEntries(m.object?.map?.entries)
    binaryEntries(m.object?.createOp?.mapCreate?.entries)
  }
  return pm
}
