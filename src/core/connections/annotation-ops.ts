import { asGatewayError, GatewayError } from '../../errors'
import type { AckSlot } from './acks'
import { Flag, loggedName, wireError, type ProtocolMessage } from './protocol'
import type { PublishHost } from './publishes'

/**
 * ANNOTATION from a client (`channel.annotations.publish` / `delete`): its `annotations` published
 * after the channel's ATTACH under way, ACKed like a MESSAGE (one serial per annotation) or
 * NACKed: an attachment without the annotation-publish mode refuses them (a channel not attached
 * takes them, within the capability).
 */
export function publishAnnotations(host: PublishHost, pm: ProtocolMessage, slot: AckSlot): void {
  const channel = typeof pm.channel === 'string' ? pm.channel : ''
  const run = async () => {
    await host.pendingAttach(channel)
    const modes = host.attachedModes(channel)
    if (modes !== undefined && !(modes & Flag.ANNOTATION_PUBLISH))
      throw new GatewayError(
        40160,
        `Channel "${channel}" is attached without the annotation_publish mode: annotations are not permitted on this attachment`,
      )
    if (!Array.isArray(pm.annotations))
      throw new GatewayError(40000, 'Invalid protocol message: ANNOTATION needs an annotations array')
    return host.core.annotations.publish(host.principalOf, channel, undefined, pm.annotations, host.id)
  }
  run().then(
    (serials) => host.acks.ack(slot, serials),
    (e) => {
      const err = asGatewayError(e)
      host.log.debug('realtime annotation refused', {
        connectionId: host.id,
        channel: loggedName(channel),
        msgSerial: slot.msgSerial,
        code: err.code,
        error: err.message,
      })
      host.acks.nack(slot, wireError(err))
    },
  )
}
