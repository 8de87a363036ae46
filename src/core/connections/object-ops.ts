import { asGatewayError, GatewayError } from '../../errors'
import { checkChannelName } from '../model/names'
import { SITE_CODE } from '../objects/live-service'
import { syncPages } from '../objects/live-sync'
import type { LiveObjectRecord } from '../objects/ports'
import { Action, Flag, loggedName, wireError, type ProtocolMessage } from './protocol'
import type { PublishHost, Publishes } from './publishes'
import type { ConnectionServices } from './services'

/**
 * The realtime side of the plugin's LiveObjects, kept apart from the connection so that it hooks
 * into it in a few lines: OBJECT publishes (ACK with one serial per operation once applied and
 * durable), the OBJECT_SYNC after every ATTACHED of an object subscriber, and what CONNECTED tells.
 */
export interface ObjectHost extends PublishHost {
  readonly publishes: Publishes
  /** Sends a protocol message that is an answer (not paused with deliveries). */
  send(pm: object): void
  /** Resolves once the socket has room (not over its unsent-bytes budget). */
  room(): Promise<void>
}

/** What `connectionDetails` carries for LiveObjects (apply-on-ACK needs the site code). */
export const objectDetails = (core: ConnectionServices) => ({
  siteCode: SITE_CODE,
  objectsGCGracePeriod: core.liveObjects.s.gcGraceMs,
})

/** OBJECT from the client: applied all or none, answered in order with the connection's other publishes. */
export function publishObjects(host: ObjectHost, pm: ProtocolMessage): void {
  const slot = host.publishes.slotFor(pm, true)
  if (!slot) return
  const { acks } = host
  // resent after a resume: answered with the first outcome, never applied twice
  const earlier = acks.earlier(slot.msgSerial)
  if (Array.isArray(earlier)) return acks.ack(slot, earlier)
  if (earlier) return void earlier.then((s) => (s.error ? acks.nack(slot, s.error) : acks.ack(slot, s.serials!)))
  void (async () => {
    try {
      const channel = checkChannelName(pm.channel)
      await host.pendingAttach(channel)
      const modes = host.attachedModes(channel)
      if (modes !== undefined && !(modes & Flag.OBJECT_PUBLISH))
        throw new GatewayError(
          40160,
          `Channel "${channel}" is attached without the object_publish mode: object operations are not permitted on this attachment`,
        )
      // resumed here without the publish memory of the node it came from (that node died): a
      // resend found in the channel's log is answered with its serials, not applied again
      if (host.publishes.unknownPastUntil > host.core.clock.now() && Array.isArray(pm.state)) {
        const resend = { msgSerial: slot.msgSerial, count: pm.state.length }
        const [before] = await host.core.channels.publishedBefore(host.principalOf, channel, host.id, [resend])
        if (before) return acks.ack(slot, before)
      }
      const ops = host.core.liveObjects.parseState(pm.state)
      const serials = await host.core.liveObjects.publish(host.principalOf, channel, ops, {
        connectionId: host.id,
        msgSerial: slot.msgSerial,
        id: `${host.id}:${slot.msgSerial}`,
      })
      acks.ack(slot, serials)
    } catch (e) {
      const err = asGatewayError(e)
      host.log.debug('realtime object publish refused', {
        connectionId: host.id,
        channel: loggedName(pm.channel),
        msgSerial: slot.msgSerial,
        code: err.code,
        error: err.message,
      })
      acks.nack(slot, wireError(err))
    }
  })()
}

/**
 * The channel's objects after ATTACHED (HAS_OBJECTS): a snapshot taken once the attachment
 * receives live operations, so every operation is in the snapshot, delivered after it, or both
 * (the client skips an operation its synced object already covers).
 */
export async function sendObjectSync(host: ObjectHost, channel: string, wireName = channel): Promise<void> {
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
