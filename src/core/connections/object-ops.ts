import { checkChannelName } from '../model/names'
import { SITE_CODE } from '../objects/live-service'
import { syncPages } from '../objects/live-sync'
import type { LiveObjectRecord } from '../objects/ports'
import type { AttachStep } from './attach-step'
import type { ConnectionHost } from './host'
import type { Operation } from './operations'
import { Action, Flag } from './protocol'
import type { ConnectionServices } from './services'

/**
 * The realtime side of the plugin's LiveObjects, kept apart from the connection so that it hooks
 * into it in a few lines: OBJECT publishes (ACK with one serial per operation once applied and
 * durable), the OBJECT_SYNC after every ATTACHED of an object subscriber, and what CONNECTED tells.
 */

/** What `connectionDetails` carries for LiveObjects (apply-on-ACK needs the site code). */
export const objectDetails = (core: ConnectionServices) => ({
  siteCode: SITE_CODE,
  objectsGCGracePeriod: core.liveObjects.s.gcGraceMs,
})

/**
 * OBJECT from the client: applied all or none, answered in order with the connection's other
 * operations; a resend after a resume is answered with its first serials (from memory, or from
 * the channel's log), never applied twice.
 */
export const OBJECT: Operation<ConnectionHost> = {
  name: 'object publish',
  mode: Flag.OBJECT_PUBLISH,
  remembered: true,
  ordered: false,
  dropsRefusals: false,
  rated: false,
  count: (pm) => (Array.isArray(pm.state) ? pm.state.length : undefined),
  // OBJECT frames go to every OBJECT_SUBSCRIBE attachment, whatever the connection's echo (transport.ts)
  echoed: (conn, channel) => ((conn.attachedModes(channel) ?? 0) & Flag.OBJECT_SUBSCRIBE) !== 0,
  run: async (conn, name, pm, msgSerial) => {
    const channel = checkChannelName(name)
    const ops = conn.core.liveObjects.parseState(pm.state)
    const origin = { connectionId: conn.id, msgSerial, id: `${conn.id}:${msgSerial}` }
    return { serials: await conn.core.liveObjects.publish(conn.principalOf, channel, ops, origin) }
  },
}

/**
 * The channel's objects after every ATTACHED of an object subscriber (HAS_OBJECTS): a full
 * OBJECT_SYNC, again after an ATTACHED sent again (a resume gap).
 */
export const OBJECT_SYNC: AttachStep = {
  name: 'objects sync',
  prepare: (req, _start, conn) => {
    if (!(req.modes & Flag.OBJECT_SUBSCRIBE)) return undefined
    const sync = () => sendObjectSync(conn, req.channel, req.wireName)
    return { flags: Flag.HAS_OBJECTS, attached: sync, reattached: sync }
  },
}

/**
 * The channel's objects after ATTACHED (HAS_OBJECTS): a snapshot taken once the attachment
 * receives live operations, so every operation is in the snapshot, delivered after it, or both
 * (the client skips an operation its synced object already covers).
 */
async function sendObjectSync(host: ConnectionHost, channel: string, wireName = channel): Promise<void> {
  const records = await host.core.liveObjects.snapshot(host.principalOf, channel)
  // a page at a time, each once the socket has room: a large tree to a slow reader is paced, never
  // piled up in memory (nor a reason to cut the client as one that does not read its answers)
  for (const pm of syncMessages(records, wireName, host.core.liveObjects.s.maxMessageSize)) {
    await host.room()
    host.send(pm)
  }
}

let syncs = 0
/** A sync id: `[A-Za-z0-9_-]+`, as the plugin parses it. */
const syncId = () => `s${(++syncs).toString(36)}${Math.random().toString(36).slice(2, 8)}`

/**
 * The OBJECT_SYNC protocol messages of a snapshot (states in the JSON wire form; the transport
 * carries `bytes` as binary in msgpack): pages bounded in bytes by `budget` (the message size
 * limit) and in objects (live-sync.ts), with `<syncId>:<cursor>`, the last one with an empty
 * cursor (the sync ends there). Always at least one page: root is in every snapshot, and a page
 * without `state` would never end the sync.
 */
export function syncMessages(records: LiveObjectRecord[], channel: string, budget: number): object[] {
  const id = syncId()
  const pages = syncPages(records, SITE_CODE, budget)
  return pages.map((state, i) => ({
    action: Action.OBJECT_SYNC,
    channel,
    channelSerial: `${id}:${i === pages.length - 1 ? '' : String(i + 1)}`,
    state,
  }))
}
