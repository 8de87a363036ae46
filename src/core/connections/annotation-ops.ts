import { GatewayError } from '../../errors'
import type { ConnectionHost } from './host'
import type { Operation } from './operations'
import { Flag } from './protocol'

/**
 * ANNOTATION from a client (`channel.annotations.publish` / `delete`): its `annotations`
 * published, one serial per annotation; an attachment without the annotation_publish mode
 * refuses them (a channel not attached takes them, within the capability).
 */
export const ANNOTATION: Operation<ConnectionHost> = {
  name: 'annotation publish',
  mode: Flag.ANNOTATION_PUBLISH,
  remembered: true,
  ordered: false,
  dropsRefusals: false,
  rated: false,
  run: async (conn, channel, pm) => {
    if (!Array.isArray(pm.annotations))
      throw new GatewayError(40000, 'Invalid protocol message: ANNOTATION needs an annotations array')
    return {
      serials: await conn.core.annotations.publish(conn.principalOf, channel, undefined, pm.annotations, conn.id),
    }
  },
}
