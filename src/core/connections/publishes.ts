import type { ConnectionHost } from './host'
import type { Operation } from './operations'
import { Flag } from './protocol'

/**
 * MESSAGE from the client (no attach needed: transient publishing), through the one publish
 * entry; on an embedded node answered with a value, so it is ACKed without a promise. A resend
 * after a resume is answered with its first outcome, from memory or from the channel's log.
 */
export const MESSAGE: Operation<ConnectionHost> = {
  name: 'publish',
  mode: Flag.PUBLISH,
  remembered: true,
  ordered: false,
  dropsRefusals: true,
  rated: true,
  count: (pm) => (Array.isArray(pm.messages) ? pm.messages.length : 1),
  // delivered back to it unless it connected with echo=false
  echoed: (conn, channel) => conn.echo && ((conn.attachedModes(channel) ?? 0) & Flag.SUBSCRIBE) !== 0,
  run: (conn, channel, pm, msgSerial) =>
    conn.core.publisher.publish(conn.principalOf, channel, pm.messages, { connectionId: conn.id, msgSerial }),
}
