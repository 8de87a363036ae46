import type { OccupancyEvent } from '../presence/occupancy-events'
import type { AttachStep } from './attach-step'
import { Action } from './protocol'

/**
 * Occupancy events of an attachment (`occupancy=metrics`): needs the channel-metadata capability;
 * without it the attach goes on, without events (and the param is not echoed). Watched from once
 * ATTACHED went out until the attachment closes.
 */
export const OCCUPANCY_EVENTS: AttachStep = {
  name: 'occupancy events',
  prepare: (req, _start, conn) =>
    req.params.occupancy === 'metrics' && conn.principalOf.capability.allows(req.channel, 'channel-metadata')
      ? {
          params: { occupancy: 'metrics' },
          attached: (att) => {
            const watcher = { occupancy: (e: OccupancyEvent) => conn.send(occupancyMessage(req.wireName, e)) }
            att.onClose(conn.core.occupancyEvents.watch(conn.principalOf.appId, req.channel, watcher))
          },
        }
      : undefined,
}

/**
 * An occupancy event as the hosted service sends it: a MESSAGE named `[meta]occupancy` whose data
 * is `{metrics}` (JSON, `encoding: json`, in either format), with no clientId, connectionId or
 * channelSerial (it is not a channel entry: a resume never asks for it).
 */
export function occupancyMessage(channel: string, e: OccupancyEvent): object {
  return {
    action: Action.MESSAGE,
    channel,
    id: e.id,
    timestamp: e.timestamp,
    messages: [
      {
        id: `${e.id}:0`,
        name: '[meta]occupancy',
        timestamp: e.timestamp,
        encoding: 'json',
        data: e.data,
      },
    ],
  }
}
