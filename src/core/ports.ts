/**
 * The ports of the core. Every backend (memory + SQLite, Redis) implements these; the core and
 * the API know nothing else about storage. Contracts are stated per method; the shared contract
 * suites (test/http, sse, compat, control, chat, objects, push, run again with TEST_BACKEND=redis)
 * hold every backend to them.
 */
import type { AccessToken, Account, ApiKey, App, HistoryQuery, Message, MessageDraft, Namespace, PresenceMessage, Queue, QueuedMessage, Rule } from './types'
import type { ObjectStore } from './objects/ports'
import type { ChatStore } from './chat/ports'
import type { PushStore } from './push/ports'

export interface Clock { now(): number }
export const systemClock: Clock = { now: () => Date.now() }

export interface PublishOptions {
  /** Channel belongs to a `persisted` namespace: keep for the long retention, durably. */
  persisted: boolean
  /**
   * The ids were supplied by the client, so they are checked against (and recorded in) the
   * idempotency window. Server-generated ids are unique by construction and skip it.
   */
  clientIds?: boolean
  /**
   * A rate-limit charge taken in the same atomic step as the append (one round trip on Redis):
   * when its bucket lacks the tokens, nothing is appended and `charged.ok` is false.
   */
  charge?: Charge
}

export interface PublishResult {
  /** One serial per message, in order. A duplicate (id seen within the window) gets the original's serial. */
  serials: string[]
  /** Count of messages that were new (not duplicates). */
  appended: number
  /** The outcome of `opts.charge`, when one was given. */
  charged?: ChargeResult
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
  /** Messages of the channel in the query's order, honouring start/end (timestamps), cursor and limit. */
  history(appId: string, channel: string, query: HistoryQuery, opts: PublishOptions): Promise<Message[]>
  /**
   * The channel's current position: its newest serial, or, when it has none, a serial below any
   * future one. A subscriber registers first, then asks, and skips deliveries at or below it.
   */
  position(appId: string, channel: string): Promise<string>
  /**
   * Retained messages with serial > `after`, oldest first, at most `limit`; `gap` is true when
   * some message after `after` is no longer retained (resume cannot be exact).
   */
  readAfter(appId: string, channel: string, after: string, limit: number): Promise<{ messages: Message[]; gap: boolean }>
  /** Names of channels that have retained messages or subscribers, sorted, after `after`, with `prefix`. */
  channels(appId: string, prefix: string, after: string | undefined, limit: number): Promise<string[]>
  /** Registers the node-wide delivery listener for a channel; returns the unsubscribe function. */
  subscribe(appId: string, channel: string, listener: BrokerListener): () => void
  /** What the node holds in memory for channels (metrics), where the broker keeps rings. */
  memory?(): { channels: number; messages: number; bytes: number }
  ready(): Promise<boolean>
  close(): Promise<void>
}

export type ControlEvent = { kind: 'key' | 'app' | 'namespace' | 'account' | 'rule' | 'queue'; appId?: string }

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
  ready(): Promise<boolean>
  close(): Promise<void>
}

/** Current presence sets and presence history per channel. */
export interface PresenceStore {
  members(appId: string, channel: string): Promise<PresenceMessage[]>
  /** Applies enter (2) / present (1) / update (4) / leave (3) events in order. */
  apply(appId: string, channel: string, events: PresenceMessage[]): Promise<void>
  history(appId: string, channel: string, query: HistoryQuery): Promise<PresenceMessage[]>
}

export type StatsUnit = 'minute' | 'hour' | 'day' | 'month'

export interface StatsRecord { intervalId: string; unit: StatsUnit; start: number; entries: Record<string, number> }

/** Counters aggregated per interval; scope is an app id or `account:<id>`. */
export interface StatsStore {
  add(scopes: string[], at: number, entries: Record<string, number>): void
  query(scope: string, unit: StatsUnit, start: number, end: number, limit: number, direction: 'forwards' | 'backwards'): Promise<StatsRecord[]>
}

/** Messages of the app queues (amqp rules); handed out with a visibility timeout, removed when acknowledged. */
export interface QueueStore {
  /** Appends, dropping the oldest beyond `maxLength`; returns how many were dropped. */
  push(queueId: string, items: Array<{ channel: string; message: Record<string, unknown> }>, maxLength: number, now: number): Promise<number>
  /** Up to `max` ready messages (not expired), hidden from other receivers for `visibilityMs`. */
  receive(queueId: string, max: number, visibilityMs: number, ttlMs: number, now: number): Promise<QueuedMessage[]>
  /** Removes acknowledged messages; returns how many were known. */
  ack(queueId: string, tags: string[]): Promise<number>
  counts(queueId: string, ttlMs: number, now: number): Promise<{ ready: number; unacknowledged: number; total: number }>
  drop(queueId: string): Promise<void>
}

/** `cost` tokens of the bucket `key` (capacity `burst`, refilled at `rate` per second), as of `now` ms. */
export interface Charge { key: string; cost: number; rate: number; burst: number; now: number }

/** Whether a charge was taken; what the bucket holds after it; when a refused one would pass (ms). */
export interface ChargeResult { ok: boolean; remaining: number; retryAfterMs: number }

/** Token buckets shared by all nodes (rate limits). */
export interface RateLimitStore {
  /**
   * Atomically refills the charge's bucket and takes its cost if available; otherwise takes
   * nothing and says when the cost would be available. A bucket's time never goes back (a node
   * whose clock is behind refills nothing).
   */
  take(c: Charge): Promise<ChargeResult>
}

/** Short-lived set of seen values (token-request nonces) shared by all nodes. */
export interface NonceStore {
  /** True when `key` was not seen in the last `ttlMs`; records it. */
  claim(key: string, ttlMs: number): Promise<boolean>
}

/**
 * Event-stream subscribers of a channel on every node of a cluster: each node reports its own
 * count whenever it changes (the hub does), and `count` adds up what the live nodes reported. A
 * single-node backend has none: the hub's own count is the whole truth.
 */
export interface OccupancyStore {
  /** This node's subscribers of the channel now; 0 when it has none left. Never throws. */
  report(appId: string, channel: string, count: number): void
  count(appId: string, channel: string): Promise<number>
}

export interface Backend {
  kind: 'memory' | 'redis'
  broker: Broker
  control: ControlStore
  presence: PresenceStore
  stats: StatsStore
  nonces: NonceStore
  limits: RateLimitStore
  /** Messages of the app queues fed by amqp rules. */
  queues: QueueStore
  /** LiveObjects state and history (see objects/ports.ts). */
  objects: ObjectStore
  /** Chat message versions, reactions, rooms and typing (see chat/ports.ts). */
  chat: ChatStore
  /** Push device registrations, channel subscriptions and delivery state (see push/ports.ts). */
  push: PushStore
  /** Subscribers across nodes (cluster backends only). */
  occupancy?: OccupancyStore
  close(): Promise<void>
}
