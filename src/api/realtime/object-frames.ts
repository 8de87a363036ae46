import { SITE_CODE } from '../../core/objects/live-service'
import { syncMessage, type LiveObjectRecord } from '../../core/objects/live-state'
import type { MapEntry, ObjectData } from '../../core/objects/live-wire'
import type { Message } from '../../core/types'
import { fromBase64 } from '../../lib/encoding'
import { Action } from './protocol'

/**
 * OBJECT and OBJECT_SYNC frames (shared/reference/ably-liveobjects.md §3, §4, §8). Operations and
 * states are kept in the JSON wire form; msgpack carries `bytes` values as binary.
 */

/** ObjectMessages an OBJECT_SYNC page holds at most (a page is one frame). */
const SYNC_PAGE = 100

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

let syncs = 0
/** A sync id: `[A-Za-z0-9_-]+`, as the plugin parses it. */
const syncId = () => `s${(++syncs).toString(36)}${Math.random().toString(36).slice(2, 8)}`

/**
 * The OBJECT_SYNC protocol messages of a snapshot: pages of SYNC_PAGE objects with `<syncId>:<cursor>`, the
 * last one with an empty cursor (the sync ends there). Always at least one page: root is in every
 * snapshot, and a page without `state` would never end the sync.
 */
export function syncMessages(records: LiveObjectRecord[], channel: string, binary: boolean): object[] {
  const id = syncId()
  const pages: object[] = []
  for (let i = 0; i < records.length || i === 0; i += SYNC_PAGE) {
    const last = i + SYNC_PAGE >= records.length
    const state = records.slice(i, i + SYNC_PAGE).map((r) => {
      const m = syncMessage(r, SITE_CODE) as { object: Record<string, any> }
      if (binary) {
        binaryEntries(m.object.map?.entries)
        binaryEntries(m.object.createOp?.mapCreate?.entries)
      }
      return m
    })
    const channelSerial = `${id}:${last ? '' : String(i + SYNC_PAGE)}`
    pages.push({ action: Action.OBJECT_SYNC, channel, channelSerial, state })
  }
  return pages
}
