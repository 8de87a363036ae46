/**
 * The ports of the core. Every backend (memory + SQLite, Redis) implements these; the core and
 * the API know nothing else about storage. Contracts are stated per method; the shared contract
 * suites (test/http, sse, compat, control, chat, objects, push, run again with TEST_BACKEND=redis)
 * hold every backend to them.
 */
import type {
  AccessToken,
  Account,
  ApiKey,
  App,
  HistoryQuery,
  Message,
  MessageDraft,
  Namespace,
  PresenceMessage,
  Queue,
  QueuedMessage,
  Rule,
  TokenRevocation,
} from './types'

/** The core's time: it reads the time and sets timers only through these (the node passes the runtime's). */
export type { Clock, Timers } from '../lib/clock'

export interface PublishOptions {
  /** Channel belongs to a `persisted` namespace: keep for the long retention, durably. */
  persisted: boolean
  /**
   * The ids were supplied by the client, so they are checked against (and recorded in) the
   * idempotency window. Server-generated ids are unique by construction and skip it.
   */
  clientIds?: boolean
  /**
   * The ids may be looked up after the publish (`serialsOf`, and `clientIds` after a restart):
   * client-supplied ones, and those of a realtime connection's protocol message, which its client
   * resends after a resume. A backend that indexes ids for the lookup may leave out the others.
   */
  findable?: boolean
  /**
   * A rate-limit charge taken in the same atomic step as the append (one round trip on Redis):
   * when its bucket lacks the tokens, nothing is appended and `charged.ok` is false.
   */
  charge?: Charge
  /**
   * The messages are ephemeral (`extras.ephemeral`): they get serials and are handed to the
   * listeners like any others, but are never stored (no log, ring, history, rewind or resume
   * replay) and skip the idempotency window. `persisted` is false with it.
   */
  ephemeral?: boolean
}

export interface PublishResult {
  /** One serial per message, in order. A duplicate (id seen within the window) gets the original's serial. */
  serials: string[]
  /** Count of messages that were new (not duplicates). */
  appended: number
  /** The outcome of `opts.charge`, when one was given. */
  charged?: ChargeResult
  /**
   * The time of the append (ms), where the broker read the clock for it (the embedded one): the
   * publish's statistics take their minute from it rather than from a clock read of their own.
   */
  at?: number
}

export type BrokerListener = (appId: string, channel: string, messages: Message[]) => void

/**
 * Channel message log and delivery. Publish appends; delivery to local subscribers comes only
 * from what the broker hands to listeners, so one node and many nodes run the same path.
 */
export interface Broker {
  /**
   * Appends `messages` to the channel in one atomic step and resolves once they are durable
   * (acknowledged). Serials are strictly increasing per channel and comparable as strings.
   * With `clientIds`, a message whose `id` was published on the channel within the idempotency
   * window is not appended again. Rejects (never hangs) when the backend is unreachable.
   */
  publish(appId: string, channel: string, messages: MessageDraft[], opts: PublishOptions): Promise<PublishResult>
  /**
   * Messages of the channel in the query's order, honouring start/end (timestamps), cursor and
   * limit; with `entries: 'versions'` the messages' later versions too, with `entries: 'all'` every
   * entry kind of the log (retained in memory or the stream).
   */
  history(appId: string, channel: string, query: HistoryQuery, opts: PublishOptions): Promise<Message[]>
  /**
   * The serials of the channel's messages with these ids (published `findable`) within the
   * idempotency window, by id; an id not found is absent. How a publish that may have been
   * appended before is told from a new one when nothing in memory knows: a realtime connection
   * resumed on a node without its publish memory (its earlier node died, or this one restarted)
   * resends what was not acknowledged. Read from the durable log where it indexes ids (persisted
   * channels, embedded), else from the newest entries retained, as far back as a bounded scan reaches.
   */
  serialsOf(appId: string, channel: string, ids: string[], opts: PublishOptions): Promise<Map<string, string>>
  /**
   * The channel's current position: its newest serial, or, when it has none, a serial below any
   * future one. A subscriber registers first, then asks, and skips deliveries at or below it.
   */
  position(appId: string, channel: string): Promise<string>
  /**
   * Retained messages with serial > `after`, oldest first, at most `limit`; `gap` is true when
   * some message after `after` is no longer retained (resume cannot be exact).
   */
  readAfter(
    appId: string,
    channel: string,
    after: string,
    limit: number,
  ): Promise<{ messages: Message[]; gap: boolean }>
  /** Names of channels that have retained messages or subscribers, sorted, after `after`, with `prefix`. */
  channels(appId: string, prefix: string, after: string | undefined, limit: number): Promise<string[]>
  /** Registers the node-wide delivery listener for a channel; returns the unsubscribe function. */
  subscribe(appId: string, channel: string, listener: BrokerListener): () => void
  /**
   * Resolves once this node's listener of the channel was handed every entry up to `serial`
   * (undefined: it was, or the node has none), within a bound (a lost notification never holds
   * its caller). A broker that hands entries to its listeners within the append (the embedded
   * one) answers undefined: its appends are delivered before they resolve.
   */
  delivered(appId: string, channel: string, serial: string): Promise<void> | undefined
  /** What the node holds in memory for channels (metrics): zeros where the broker keeps no rings of its own. */
  memory(): { channels: number; messages: number; bytes: number }
  ready(): Promise<boolean>
  close(): Promise<void>
}

/**
 * The append of `Broker.publish` made at once, by a broker that needs no I/O to make it (the
 * embedded one): its result, or what `publish` would reject with thrown. A capability a backend
 * gives beside its broker (CorePorts `syncAppend`), found once when the core is built: the
 * publisher appends through it (a realtime publish answered without a promise turn is ~10%
 * cheaper for the node), and a store of the same backend that appends to a channel's log in its
 * own synchronous step (the embedded LiveObjects) takes it instead of the concrete broker.
 */
export interface SyncAppend {
  publishNow(appId: string, channel: string, messages: MessageDraft[], opts: PublishOptions): PublishResult
}

export type ControlEvent = { kind: 'key' | 'app' | 'namespace' | 'account' | 'rule' | 'queue'; appId?: string }

/** What bootstrap writes into a store that holds nothing yet, together with its epoch. */
export interface BootstrapSeed {
  /** A new random id naming this generation of the store's data. */
  epoch: string
  account: Account
  app: App
  key: ApiKey
  token: AccessToken
}

/**
 * `seeded`: the store was empty and now holds the seed; `existing`: it already held data (the
 * seed was not written); `lost`: another node found the store's data lost, and bootstrapping a
 * new generation over it needs the operator's consent.
 */
export type BootstrapOutcome = { status: 'seeded' | 'existing'; epoch: string } | { status: 'lost' }

/** Accounts, apps, keys, namespaces and management access tokens. */
export interface ControlStore {
  listAccounts(): Promise<Account[]>
  getAccount(id: string): Promise<Account | undefined>
  createAccount(account: Account): Promise<void>
  getApp(id: string): Promise<App | undefined>
  listApps(accountId: string): Promise<App[]>
  /** Creates or replaces. */
  createApp(app: App): Promise<void>
  deleteApp(id: string): Promise<void>
  /** Key by its full name `appId.keyId`. */
  getKey(keyName: string): Promise<ApiKey | undefined>
  listKeys(appId: string): Promise<ApiKey[]>
  /** Creates or replaces (update and revoke are replacements). */
  createKey(key: ApiKey): Promise<void>
  listNamespaces(appId: string): Promise<Namespace[]>
  putNamespace(ns: Namespace): Promise<void>
  deleteNamespace(appId: string, id: string): Promise<void>
  listRules(appId: string): Promise<Rule[]>
  /** Creates or replaces. */
  putRule(rule: Rule): Promise<void>
  deleteRule(appId: string, id: string): Promise<void>
  listQueues(appId: string): Promise<Queue[]>
  putQueue(queue: Queue): Promise<void>
  deleteQueue(appId: string, id: string): Promise<void>
  getAccessTokenByHash(hash: string): Promise<AccessToken | undefined>
  createAccessToken(token: AccessToken): Promise<void>
  /** Called after any change, on every node, so caches can be dropped. */
  onChange(listener: (e: ControlEvent) => void): () => void
  /**
   * Bootstrap as one atomic step across every node sharing the store: without an epoch and
   * without accounts, writes the seed's records and its epoch; with accounts but no epoch (a
   * store from before epochs), writes only the epoch; with an epoch, writes nothing. Answers
   * the epoch in force, and afterwards this node's reads see every record of the store. A store
   * marked lost (markDataLost) answers `lost` unless `acceptDataLoss`, which clears the mark.
   */
  bootstrap(seed: BootstrapSeed, acceptDataLoss: boolean): Promise<BootstrapOutcome>
  /** The epoch record as the store holds it now (undefined: gone); rejects when the store is unreachable. */
  epoch(): Promise<string | undefined>
  /** Records that the store's data was lost (so nodes starting later do not bootstrap over it silently). */
  markDataLost(): Promise<void>
  /**
   * A random secret made once by whichever node asks first and the same on every node of the
   * store; never leaves the servers (it signs what only servers may mint: connection keys).
   */
  secret(): Promise<string>
  ready(): Promise<boolean>
  close(): Promise<void>
}

/** Which retention window a channel's history is kept for (a `persisted` namespace's, or the short one). */
export type HistoryRetention = Pick<PublishOptions, 'persisted'>

/** A present member that left without saying so (its connection dropped, or its node died). */
export interface OrphanMember {
  appId: string
  channel: string
  /** The member as it was last present (its last data). */
  member: PresenceMessage
}

/**
 * Current presence sets and presence history per channel, and which node holds the connections
 * members were entered over, so members leave when their connection or its node is gone.
 */
export interface PresenceStore {
  members(appId: string, channel: string): Promise<PresenceMessage[]>
  /** Members present on the channel now. */
  count(appId: string, channel: string): Promise<number>
  /**
   * Applies enter (2) / present (1) / update (4) / leave (3) events in order: a member is keyed
   * by (connectionId, clientId) and recorded as one of its connection's. The events join the
   * channel's presence history, which is kept as long as its message history (`persisted`: the
   * long retention, else HISTORY_TTL_MS): older events are dropped, and a channel with no member
   * and no event left in its window holds nothing.
   */
  apply(appId: string, channel: string, events: PresenceMessage[], retention: HistoryRetention): Promise<void>
  /** Presence history within the channel's retention window (as its message history's). */
  history(appId: string, channel: string, query: HistoryQuery, retention: HistoryRetention): Promise<PresenceMessage[]>
  /** The members entered over a connection that are present now (a resumed connection learns its own). */
  ofConnection(connectionId: string): Promise<OrphanMember[]>
  /** This node holds connection `connectionId` now (a new connection, or one resumed here). */
  claim(connectionId: string): Promise<void>
  /**
   * Removes and returns every member entered over `connectionId` (on every channel), if this node
   * still holds the connection; nothing when another node has claimed it since (it resumed there).
   */
  take(connectionId: string): Promise<OrphanMember[]>
  /**
   * Removes and returns the members of connections held by nodes that stopped renewing their
   * lease (killed), each to one caller only. A single-node store has none.
   */
  reap(): Promise<OrphanMember[]>
  /** This node's name among the nodes sharing the store (the name its lease is renewed under). */
  readonly node: string
  /**
   * Whether connection `connectionId` is on a live node, as the leases tell: node `issuer` (which
   * issued a key of it) or the node holding the connection now (it resumed there) still renews
   * its lease. A single-node store: always.
   */
  onLiveNode(issuer: string, connectionId: string): Promise<boolean>
}

export type StatsUnit = 'minute' | 'hour' | 'day' | 'month'

export interface StatsRecord {
  intervalId: string
  unit: StatsUnit
  start: number
  entries: Record<string, number>
}

/** Counters aggregated per interval; scope is an app id or `account:<id>`. */
export interface StatsStore {
  add(scopes: string[], at: number, entries: Record<string, number>): void
  query(
    scope: string,
    unit: StatsUnit,
    start: number,
    end: number,
    limit: number,
    direction: 'forwards' | 'backwards',
  ): Promise<StatsRecord[]>
}

/** Messages of the app queues (amqp rules); handed out with a visibility timeout, removed when acknowledged. */
export interface QueueStore {
  /** Appends, dropping the oldest beyond `maxLength`; returns how many were dropped. */
  push(
    queueId: string,
    items: Array<{ channel: string; message: Record<string, unknown> }>,
    maxLength: number,
    now: number,
  ): Promise<number>
  /** Up to `max` ready messages (not expired), hidden from other receivers for `visibilityMs`. */
  receive(queueId: string, max: number, visibilityMs: number, ttlMs: number, now: number): Promise<QueuedMessage[]>
  /** Removes acknowledged messages; returns how many were known. */
  ack(queueId: string, tags: string[]): Promise<number>
  counts(queueId: string, ttlMs: number, now: number): Promise<{ ready: number; unacknowledged: number; total: number }>
  drop(queueId: string): Promise<void>
}

/** A queue as the AMQP broker holds it. */
export interface BrokerQueue {
  appId: string
  /** The broker's name of the queue: `<appId>:<name>`, as the hosted service forms it. */
  name: string
  /** Messages expire this long after they were routed (the queue's `ttl`). */
  ttlMs: number
  /** Messages kept at most; beyond, the oldest are dropped. */
  maxLength: number
}

/**
 * App queues on an AMQP 0-9-1 broker (RabbitMQ), read and acknowledged by consumers over AMQP
 * with credentials that reach only their own app's queues. Without one, queues live in the
 * QueueStore (read over HTTP).
 */
export interface QueueBroker {
  /**
   * Declares the queue (durable; idempotent) and the app's consumer credentials (read on the
   * app's queues, nothing else). Rejects when the broker cannot be reached.
   */
  declare(q: BrokerQueue): Promise<void>
  /** Deletes the queue with its messages (nothing if it is gone); what this node holds for it is dropped. */
  remove(q: BrokerQueue): Promise<void>
  /** Deletes the app's consumer user with its permissions (nothing if it is gone). */
  removeConsumer(appId: string): Promise<void>
  /** The AMQP URI the app's consumers connect with, its credentials included. */
  consumerUri(appId: string): Promise<string>
  /** Message counts as the broker last reported them (zero when it cannot say). */
  counts(q: BrokerQueue): Promise<{ ready: number; unacknowledged: number; total: number }>
  /**
   * Hands one message of the account's app to this node's bounded delivery buffer. Never waits
   * and never throws: delivered in order with publisher confirms, retried while the broker is
   * unreachable (so at least once), dropped and counted once older than the queue's ttl or when
   * the buffer is full (the account holding the most of it loses its oldest message; no account
   * loses one while another holds more).
   */
  send(
    q: BrokerQueue,
    body: string,
    props: { accountId: string; messageId: string; headers: Record<string, string> },
  ): void
  /** Calls `listener` as messages are confirmed by the broker or given up (for the app's stats). */
  observe(listener: QueueOutcome): void
  close(): Promise<void>
}

/** Messages of an app's queues the broker confirmed (`delivered`) or that were given up (`dropped`). */
export type QueueOutcome = (appId: string, accountId: string, outcome: 'delivered' | 'dropped', n: number) => void

/** `cost` tokens of the bucket `key` (capacity `burst`, refilled at `rate` per second), as of `now` ms. */
export interface Charge {
  key: string
  cost: number
  rate: number
  burst: number
  now: number
}

/** Whether a charge was taken; what the bucket holds after it; when a refused one would pass (ms). */
export interface ChargeResult {
  ok: boolean
  remaining: number
  retryAfterMs: number
}

/** Token buckets shared by all nodes (rate limits). */
export interface RateLimitStore {
  /**
   * Atomically refills the charge's bucket and takes its cost if available; otherwise takes
   * nothing and says when the cost would be available. A bucket's time never goes back (a node
   * whose clock is behind refills nothing).
   */
  take(c: Charge): Promise<ChargeResult>
}

/**
 * Token revocations shared by all nodes. Reads come from this node's memory (token verification
 * asks on every request of a revocable token); a revocation stored on any node reaches every
 * node's memory and listeners through a change feed.
 */
export interface RevocationStore {
  /** Stores revocations durably; once it resolves, this node's reads and listeners have them too. Rejects (never hangs) when the backend is unreachable. */
  add(revocations: TokenRevocation[]): Promise<void>
  /**
   * The revocations of the key that may still refuse a token at `now` (not expired), from memory.
   * One that another revocation of the same target covers (issued no later, applying no earlier)
   * may be left out.
   */
  forKey(keyName: string, now: number): readonly TokenRevocation[]
  /** Called on every node with the revocations added on any node (at least once each). */
  onChange(listener: (revocations: TokenRevocation[]) => void): () => void
}

/**
 * What a nonce claim found: `claimed` (not live before; recorded now), `seen` (live: a replay),
 * `scopeFull` (the scope already holds its bound of live keys) or `storeFull` (the store holds
 * its whole bound). The last two record nothing.
 */
export type NonceClaim = 'claimed' | 'seen' | 'scopeFull' | 'storeFull'

/**
 * Seen token-request nonces, shared by all nodes, counted per scope (an account). A live key is
 * never forgotten before its ttl, whatever else is recorded: where there is no room for a new
 * one the claim says so and the request is refused. Nothing else shares this store (marks about
 * connections have their own, MarkStore), so no other record can take a nonce's room.
 */
export interface NonceStore {
  /** Records `key` in `scope` for `ttlMs` unless it is live, or `scope` already holds `maxPerScope` live keys. */
  claim(scope: string, key: string, ttlMs: number, maxPerScope: number): Promise<NonceClaim>
  /** Whether `key` is recorded in `scope` and has not expired (records nothing). */
  has(scope: string, key: string): Promise<boolean>
}

/**
 * Short-lived marks about realtime connections (closed or expired, so their keys no longer
 * resume; re-authorised as another identity), shared by all nodes and bounded per scope (an app):
 * past `maxPerScope` the scope's oldest mark is forgotten, so one tenant can crowd out only its
 * own. Forgetting a mark early costs little (see core/auth/ended-connections.ts), unlike a nonce,
 * which is why nonces have a store of their own. A store may also bound all its marks, oldest first.
 */
export interface MarkStore {
  /** Records `key` for `ttlMs`; without a scope it counts only towards the store's whole bound. */
  add(scope: string | undefined, key: string, ttlMs: number, maxPerScope: number): Promise<void>
  /** Whether `key` is recorded and has not expired (records nothing). */
  has(key: string): Promise<boolean>
}

/**
 * The channels active on each account, on every node (ACCOUNT_MAX_CHANNELS and
 * ACCOUNT_MAX_NEW_CHANNEL_RATE): a node names a channel when one of its clients attaches it and
 * names it again while it holds attachments on it; a channel not named for `staleMs` is no longer
 * active. `member` is `<appId>:<channel>`; times are the core clock's (ms).
 */
export interface ActiveChannelStore {
  /** Whether `member` was named within `staleMs` of `now` (records nothing). */
  has(accountId: string, member: string, now: number, staleMs: number): Promise<boolean>
  /**
   * Names `member` active at `now`, in one atomic step: `known` when it was active already,
   * `added` when the account had fewer than `max` (0: no bound) other active channels, else
   * `full` and nothing is recorded. Channels past `staleMs` no longer count (and are forgotten).
   */
  add(accountId: string, member: string, now: number, max: number, staleMs: number): Promise<'known' | 'added' | 'full'>
  /** Names `members` active at `now` again (a node's refresh of what it holds attachments on); never throws. */
  touch(accountId: string, members: string[], now: number, staleMs: number): Promise<void>
}

/** Attachments of a channel by what they do (a connection may count in several). */
export interface OccupancyCounts {
  /** Connections attached (event streams and realtime attachments). */
  connections: number
  /** ... that may publish (realtime PUBLISH mode). */
  publishers: number
  /** ... that receive messages. */
  subscribers: number
  /** ... that receive presence events. */
  presenceSubscribers: number
  /** ... that may send object operations (realtime OBJECT_PUBLISH mode, LiveObjects). */
  objectPublishers: number
  /** ... that receive object operations (realtime OBJECT_SUBSCRIBE mode). */
  objectSubscribers: number
}

/**
 * Occupancy of a channel on every node of a cluster: each node reports its own counts whenever
 * they change, and `count` adds up what the live nodes reported. A single-node backend has none:
 * the node's own counts are the whole truth.
 */
export interface OccupancyStore {
  /** This node's counts for the channel now (all zero when it has none left). Never throws. */
  report(appId: string, channel: string, counts: OccupancyCounts): void
  count(appId: string, channel: string): Promise<OccupancyCounts>
}
