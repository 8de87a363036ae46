import { Authenticator, type AuthenticatorSettings } from './auth/authenticator'
import { TokenRequests, type TokenRequestSettings } from './auth/token-requests'
import { ConnectionKeys } from './auth/connection-keys'
import { EndedConnections, type EndedConnectionSettings } from './auth/ended-connections'
import { TokenRevocations } from './auth/token-revocations'
import { Publisher, type ChannelSettings } from './channels/publisher'
import { ChannelQueries } from './channels/channel-queries'
import { Batches } from './channels/batches'
import { OnBehalf } from './channels/on-behalf'
import { AnnotationService, type SummarySettings } from './channels/annotation-service'
import { MutableMessages, type MutableSettings } from './channels/mutable-messages'
import { ChatService, DEFAULT_TYPING_TIMEOUT_MS } from './chat/chat-service'
import { DataGuard } from './control/data-guard'
import { AppRemoval } from './control/app-removal'
import { Integrations, type IntegrationSettings } from './control/integrations'
import { Management } from './control/management'
import { RulesEngine } from './rules/rules-engine'
import { WebhookDispatcher, type WebhookSettings } from './rules/webhooks'
import { createPoster } from '../lib/http-post'
import { Namespaces } from './control/namespaces'
import { Sandbox } from './control/sandbox'
import { Hub } from './fanout/hub'
import { DeliveryStages, type StageSettings } from './fanout/delivery-stages'
import { Occupancy } from './fanout/occupancy'
import { AccountConnections, type AccountConnectionSettings } from './connections/account-connections'
import { Streams } from './fanout/streams'
import { RateLimiter, type LimitSettings } from './limits/rate-limiter'
import { ActiveChannels, type ActiveChannelSettings } from './fanout/active-channels'
import { ObjectService } from './objects/object-service'
import { LiveObjectService } from './objects/live-service'
import { LiveObjectRest } from './objects/live-rest'
import { ConnectionPresence, type ConnectionPresenceSettings } from './connections/connection-presence'
import { PresenceService } from './presence/presence-service'
import { OccupancyEvents } from './presence/occupancy-events'
import { PushService, type PushSettings } from './push/push-service'
import type {
  Broker,
  Clock,
  ControlStore,
  MarkStore,
  NonceStore,
  OccupancyStore,
  ActiveChannelStore,
  PresenceStore,
  QueueBroker,
  QueueStore,
  RateLimitStore,
  RevocationStore,
  StatsStore,
  SyncAppend,
  Timers,
} from './ports'
import type { AnnotationStore, VersionStore } from './channels/ports'
import type { ChatStore } from './chat/ports'
import type { LiveObjectStore, ObjectStore } from './objects/ports'
import type { PushStore } from './push/ports'
import { StatsService } from './stats/stats-service'
import { ChannelFilters, type FilterSettings } from './fanout/channel-filters'

export type CoreSettings = TokenRequestSettings &
  EndedConnectionSettings &
  ChannelSettings &
  MutableSettings &
  LimitSettings &
  ActiveChannelSettings &
  AccountConnectionSettings &
  PushSettings &
  WebhookSettings &
  IntegrationSettings &
  ConnectionPresenceSettings &
  SummarySettings &
  AuthenticatorSettings &
  FilterSettings &
  StageSettings & {
    liveObjectsMaxObjects: number
    liveObjectsMaxMapKeys: number
    liveObjectsGcGraceMs: number
    liveObjectsMaxChannelBytes: number
  }

/**
 * The ports the core is built on, each where its contract is stated (ports.ts and the folders'
 * ports.ts). A backend gives them (backend/backend.ts); the core knows nothing of how.
 */
export interface CorePorts {
  /** Which store gives them (readiness reports it). */
  kind: 'memory' | 'redis'
  broker: Broker
  /** The broker's append made at once, where it needs no I/O (the embedded backend); else absent. */
  syncAppend?: SyncAppend
  control: ControlStore
  presence: PresenceStore
  stats: StatsStore
  /** Token-request nonces (never evicted while live). */
  nonces: NonceStore
  /** Marks about realtime connections (kept apart from the nonces). */
  marks: MarkStore
  /** Token revocations (keys with revocableTokens). */
  revocations: RevocationStore
  limits: RateLimitStore
  /** Messages of the app queues fed by amqp rules. */
  queues: QueueStore
  /** App queues on an AMQP broker (AMQP_URL): when set, amqp rules and the queue API use it instead of `queues`. */
  queueBroker?: QueueBroker
  /** LiveObjects state and history (see objects/ports.ts). */
  objects: ObjectStore
  /** The plugin's LiveObjects: objects of channels changed by operations in the channel's log (objects/ports.ts). */
  liveObjects: LiveObjectStore
  /** Versions of the messages of mutable channels (see channels/ports.ts). */
  versions: VersionStore
  /** Annotations of messages and their summaries (see channels/ports.ts). */
  annotations: AnnotationStore
  /** Chat message versions, reactions, rooms and typing (see chat/ports.ts). */
  chat: ChatStore
  /** Push device registrations, channel subscriptions and delivery state (see push/ports.ts). */
  push: PushStore
  /** Occupancy across nodes (cluster backends only). */
  occupancy?: OccupancyStore
  /** The channels active on each account, on every node. */
  activeChannels: ActiveChannelStore
}

/** The domain services of one node, built on its ports. */
export interface Core {
  clock: Clock
  /** The timers of the core's services (the connections' too). */
  timers: Timers
  /** Which backend the node runs on. */
  backendKind: CorePorts['kind']
  /**
   * Readiness: every store this node needs answers (a failing check counts as not ready), and
   * still holds the data the node started on (`problem` says what is wrong when it does not).
   */
  health(): Promise<{ ready: boolean; backend: CorePorts['kind']; problem?: string }>
  /** Watches the store's epoch (set from bootstrap's result). */
  dataGuard: DataGuard
  /** What the node holds in memory for channel history (metrics), where the broker keeps rings. */
  memory(): { channels: number; messages: number; bytes: number }
  /** The broker's `delivered` (ports.ts), where its appends reach this node's listeners after they resolve. */
  delivered?: Broker['delivered']
  auth: Authenticator
  tokens: TokenRequests
  /** Realtime connection keys: issued and verified with the servers' secret, bound to app and identity. */
  connectionKeys: ConnectionKeys
  /** Realtime connections closed or expired: not resumable on any node. */
  endedConnections: EndedConnections
  /** Token revocation (keys with revocableTokens). */
  revocations: TokenRevocations
  namespaces: Namespaces
  hub: Hub
  /** Attachments per channel by role, on this node and (clusters) every node. */
  occupancy: Occupancy
  /** `[meta]occupancy` events for attachments that ask for them (`occupancy=metrics`). */
  occupancyEvents: OccupancyEvents
  /** Opening and tracking subscription streams for every transport. */
  streams: Streams
  /** The account's connection bounds (ACCOUNT_MAX_CONNECTIONS, ACCOUNT_MAX_CONNECTION_RATE), every transport. */
  accountConnections: AccountConnections
  /** The channels active on each account (ACCOUNT_MAX_CHANNELS, ACCOUNT_MAX_NEW_CHANNEL_RATE). */
  activeChannels: ActiveChannels
  limits: RateLimiter
  stats: StatsService
  presence: PresenceService
  /** Presence entered over client connections (realtime): enter/update/leave, grace periods, dead nodes. */
  connectionPresence: ConnectionPresence
  /** Publishes on channels (REST and realtime: one entry). */
  publisher: Publisher
  /** History, channel details and enumeration, published ids looked up. */
  channels: ChannelQueries
  /** Batch publish and batch presence. */
  batches: Batches
  /** Message updates, deletes and appends; one message and its versions. */
  messages: MutableMessages
  /** Annotations of messages and their summaries. */
  annotations: AnnotationService
  management: Management
  sandbox: Sandbox
  objects: ObjectService
  /** The plugin's LiveObjects (channel objects, OBJECT / OBJECT_SYNC, /channels/{ch}/object). */
  liveObjects: LiveObjectService
  /** Its REST side: reads by id or path, operations by id or path. */
  liveObjectsRest: LiveObjectRest
  chat: ChatService
  integrations: Integrations
  webhooks: WebhookDispatcher
  push: PushService
  /**
   * Stops the services' own timers and holds (chat typing, occupancy events, presence entered over
   * connections: its reaper and grace periods), so a node stops them in one call. The ports are
   * the backend's to close; webhook deliveries still queued are `webhooks.settle`'s.
   */
  close(): void
}

export function createCore(backend: CorePorts, clock: Clock, timers: Timers, s: CoreSettings): Core {
  const auth = new Authenticator(backend.control, backend.revocations, clock, s)
  const namespaces = new Namespaces(backend.control)
  const occupancy = new Occupancy(backend.occupancy)
  const stats = new StatsService(backend.stats, clock)
  const limits = new RateLimiter(backend.limits, backend.control, clock, s)
  // rule webhooks are tenant-set: only public addresses unless the operator allows others; the
  // push relay (PUSH_WEBHOOK_URL) is the operator's own, so it may be anywhere
  const webhooks = new WebhookDispatcher(createPoster({ allowPrivate: s.webhookAllowPrivateTargets }), clock, s, stats)
  // what app queues on the broker took and gave up shows in the app's stats
  backend.queueBroker?.observe((appId, accountId, outcome, n) =>
    outcome === 'delivered' ? stats.queueDelivered(appId, accountId, n) : stats.queueDropped(appId, accountId, n),
  )
  const rules = new RulesEngine(backend.control, backend.queues, webhooks, clock, () => {}, backend.queueBroker)
  const appRemoval = new AppRemoval(backend.control, backend.queues, backend.queueBroker)
  const removeApp = (appId: string) => appRemoval.remove(appId)
  const management = new Management(backend.control, clock, removeApp)
  const presence = new PresenceService(backend.broker, backend.presence, namespaces, limits, rules)
  const dataGuard = new DataGuard(backend.control)
  const connectionKeys = new ConnectionKeys(
    backend.control,
    backend.marks,
    clock,
    s.connectionMarksPerApp,
    backend.presence.node,
  )
  const endedConnections = new EndedConnections(backend.marks, s.connectionMarksPerApp)
  const annotations = new AnnotationService(
    backend.broker,
    backend.annotations,
    namespaces,
    limits,
    clock,
    timers,
    s.maxMessageSize,
    s,
  )
  const messages = new MutableMessages(backend.broker, backend.versions, namespaces, limits, stats, s)
  // delivery stages (fanout/delivery-stages.ts): a late joiner's first delivery reads the version store
  const stages = new DeliveryStages(namespaces, timers, (appId, ch, append) => messages.joinedAt(appId, ch, append), s)
  const hub = new Hub(backend.broker, clock, timers, stages.holdFor)
  const push = new PushService(
    backend.push,
    backend.control,
    backend.broker,
    namespaces,
    limits,
    clock,
    createPoster({ allowPrivate: true }),
    s,
  )
  const liveObjects = new LiveObjectService(
    backend.liveObjects,
    namespaces,
    clock,
    {
      maxObjects: s.liveObjectsMaxObjects,
      maxKeys: s.liveObjectsMaxMapKeys,
      gcGraceMs: s.liveObjectsGcGraceMs,
      maxChannelBytes: s.liveObjectsMaxChannelBytes,
      maxMessageSize: s.maxMessageSize,
    },
    limits,
  )
  const publisher = new Publisher(
    backend.broker,
    backend.syncAppend,
    namespaces,
    stats,
    limits,
    rules,
    s,
    push,
    messages,
    new OnBehalf(connectionKeys, endedConnections, backend.presence),
  )
  const chat = new ChatService(
    backend.broker,
    backend.chat,
    backend.presence,
    occupancy,
    annotations,
    messages,
    stats,
    limits,
    clock,
    timers,
    {
      maxMessageSize: s.maxMessageSize,
      typingTimeoutMs: DEFAULT_TYPING_TIMEOUT_MS,
    },
  )
  const activeChannels = new ActiveChannels(backend.activeChannels, occupancy, limits, clock, timers, s)
  const occupancyEvents = new OccupancyEvents(occupancy, presence, hub, clock, timers)
  const connectionPresence = new ConnectionPresence(presence, backend.presence, limits, stats, s, () => {}, timers)
  return {
    clock,
    timers,
    backendKind: backend.kind,
    async health() {
      const [problem, ...checks] = await Promise.all([
        dataGuard.check(),
        ...[backend.broker.ready(), backend.control.ready()].map((p) => p.catch(() => false)),
      ])
      return { ready: checks.every(Boolean) && !problem, backend: backend.kind, ...(problem ? { problem } : {}) }
    },
    dataGuard,
    memory: () => backend.broker.memory(),
    delivered: (appId: string, channel: string, serial: string) => backend.broker.delivered(appId, channel, serial),
    auth,
    tokens: new TokenRequests(auth, backend.nonces, limits, stats, clock, s),
    connectionKeys,
    endedConnections,
    revocations: new TokenRevocations(auth, backend.revocations, limits, clock),
    namespaces,
    hub,
    occupancy,
    occupancyEvents,
    streams: new Streams(
      hub,
      occupancy,
      backend.broker,
      auth,
      backend.control,
      backend.revocations,
      clock,
      timers,
      stats,
      new ChannelFilters(s),
      (appId, channel, entries) => messages.rewound(appId, channel, entries),
      stages,
      activeChannels.bounded ? (p, channel) => activeChannels.admit(p, channel) : undefined,
    ),
    limits,
    stats,
    presence,
    connectionPresence,
    accountConnections: new AccountConnections(backend.occupancy, limits, s),
    activeChannels,
    publisher,
    channels: new ChannelQueries(backend.broker, presence, namespaces, occupancy, limits, messages),
    batches: new Batches(publisher, presence, limits),
    messages,
    annotations,
    management,
    integrations: new Integrations(management, backend.control, backend.queues, clock, s, backend.queueBroker),
    webhooks,
    push,
    sandbox: new Sandbox(backend.control, presence, stats, clock, removeApp),
    objects: new ObjectService(backend.objects, backend.broker, namespaces, hub, clock, limits),
    liveObjects,
    liveObjectsRest: new LiveObjectRest(liveObjects),
    chat,
    close() {
      activeChannels.close()
      chat.close()
      occupancyEvents.close()
      connectionPresence.close()
    },
  }
}
