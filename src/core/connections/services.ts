import type { AccountConnections } from './account-connections'
import type { Authenticator } from '../auth/authenticator'
import type { ConnectionKeys } from '../auth/connection-keys'
import type { EndedConnections } from '../auth/ended-connections'
import type { ChannelQueries } from '../channels/channel-queries'
import type { Publisher } from '../channels/publisher'
import type { AnnotationService } from '../channels/annotation-service'
import type { OccupancyEvents } from '../presence/occupancy-events'
import type { Occupancy } from '../fanout/occupancy'
import type { Streams } from '../fanout/streams'
import type { Broker, Clock, Timers } from '../ports'
import type { PresenceService } from '../presence/presence-service'
import type { StatsService } from '../stats/stats-service'
import type { LiveObjectService } from '../objects/live-service'
import type { ConnectionPresence } from './connection-presence'
import type { Hub } from '../fanout/hub'

/** The core services a realtime connection uses (the node's `Core` is one; unit tests pass their own). */
export interface ConnectionServices {
  clock: Clock
  /** The timers of the connections (heartbeat ticks, token renewal and expiry). */
  timers: Timers
  auth: Authenticator
  /** The account's connection bounds (ACCOUNT_MAX_CONNECTIONS, ACCOUNT_MAX_CONNECTION_RATE). */
  accountConnections: AccountConnections
  connectionKeys: ConnectionKeys
  endedConnections: EndedConnections
  connectionPresence: ConnectionPresence
  presence: PresenceService
  streams: Streams
  occupancy: Occupancy
  /** `[meta]occupancy` events of `occupancy=metrics` attachments. */
  occupancyEvents: OccupancyEvents
  stats: StatsService
  publisher: Publisher
  /**
   * Resolves once this node handed a channel's entries up to a serial to its subscribers (the
   * broker's `delivered`): an operation whose copy the connection receives is answered after it.
   */
  delivered?: Broker['delivered']
  /** Publishes of a resumed connection looked up in the channel's log. */
  channels: ChannelQueries
  /** The plugin's LiveObjects (object-ops.ts). */
  liveObjects: LiveObjectService
  /** ANNOTATION publishes. */
  annotations: AnnotationService
  /** The node's local subscriptions: a dropped connection's keepers of live-only entries subscribe there (live-only-keeper.ts). */
  hub?: Hub
}
