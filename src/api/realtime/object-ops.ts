import type { Core } from '../../core'
import { checkChannelName } from '../../core/model/names'
import { SITE_CODE } from '../../core/objects/live-service'
import { GatewayError } from '../../errors'
import { toGatewayError } from '../plugins/errors'
import type { Format } from './frames'
import { syncMessages } from './object-frames'
import { Flag, loggedName, wireError, type ProtocolMessage } from './protocol'
import type { PublishHost, Publishes } from './publishes'

/**
 * The realtime side of the plugin's LiveObjects, kept apart from the connection so that it hooks
 * into it in a few lines: OBJECT publishes (ACK with one serial per operation once applied and
 * durable), the OBJECT_SYNC after every ATTACHED of an object subscriber, and what CONNECTED tells.
 */
export interface ObjectHost extends PublishHost {
  readonly format: Format
  readonly publishes: Publishes
  /** Sends a protocol message that is an answer (not paused with deliveries). */
  send(pm: object): void
  /** Resolves once the socket has room (not over its unsent-bytes budget). */
  room(): Promise<void>
}

/** What `connectionDetails` carries for LiveObjects (apply-on-ACK needs the site code). */
export const objectDetails = (core: Core) => ({
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
      if (host.publishes.unknownPastUntil > Date.now() && Array.isArray(pm.state)) {
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
      const err = toGatewayError('UNKNOWN', e)
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
  for (const pm of syncMessages(records, wireName, host.format === 'msgpack')) {
    await host.room()
    host.send(pm)
  }
}
