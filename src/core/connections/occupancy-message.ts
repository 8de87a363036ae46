import type { OccupancyEvent } from '../presence/occupancy-events'
import { Action } from './protocol'

/** The channel param that asks for occupancy events, and its one value. */
export const wantsOccupancy = (params: Record<string, unknown>): boolean => params.occupancy === 'metrics'

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
