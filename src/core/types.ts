/** Domain records shared by the core and the backends. Plain data; no behaviour. */
import type { ErrorBody } from '../errors'

/**
 * What a channel's log holds besides messages, in the same order and serial space: every kind
 * travels through the broker, the rings, resume and the hub the same way, so each transport gets
 * all of a channel's events in one order, exactly once. Absent means a channel message;
 * `mutation`: a new version of an earlier message (update, delete or append, see `Mutation`),
 * delivered as a message but not an item of message history; `object`: a LiveObjects operation
 * (`data` its JSON text, see objects/live-service.ts), delivered as OBJECT to object subscribers only;
 * `annotation` and `summary`: an annotation of a message and the message's summary after it
 * (channels/annotation-entries.ts), delivered live only (ephemeral), never kept in the log.
 */
export type EntryKind = 'presence' | 'mutation' | 'object' | 'annotation' | 'summary'

/** Who made a change of a message and why (the operation of an update, delete or append). */
export interface Operation {
  clientId?: string
  description?: string
  metadata?: Record<string, unknown>
}

/**
 * What an entry of kind `mutation` changes: the message it is a version of (its serial and
 * creation time, which the wire shows as the message's own) and the operation (the wire's
 * `version`, with the entry's own serial and timestamp).
 */
export interface Mutation extends Operation {
  serial: string
  timestamp: number
}

/** A version of a message: its serial (the serial of the change's log entry) and time, and the operation. */
export interface MessageVersion extends Operation {
  serial: string
  timestamp: number
}

/**
 * An entry of a channel's log as stored and delivered: a channel message, or (with `kind`) another
 * kind of event, whose fields mean what they mean for that kind (a presence event: `action` is the
 * presence action, `clientId` and `connectionId` the member, `id` the presence id; no `name`).
 * `data` is a string or bytes, never an object.
 */
export interface Message {
  id: string
  serial: string
  timestamp: number
  name?: string
  data?: string | Uint8Array
  encoding?: string
  clientId?: string
  connectionId?: string
  extras?: Record<string, unknown>
  /**
   * Messages: the Pub/Sub action on the wire (0 create, 1 update, 2 delete, 5 append; absent
   * means 0). Presence: its action.
   */
  action?: number
  /** Absent for channel messages. */
  kind?: EntryKind
  /** Entries of kind `mutation`: the message they change and how. */
  mutation?: Mutation
  /**
   * A message read in a later version than it was published in (history, one message): which
   * version. Never set on log entries: serial and timestamp stay the message's own.
   */
  version?: MessageVersion
  /** A message read with its annotations' summary (history, one message), keyed by annotation type. */
  annotations?: { summary: Record<string, unknown> }
}

/** A message before the broker has given it a serial and timestamp. */
export type MessageDraft = Omit<Message, 'serial' | 'timestamp'> & { timestamp?: number }

/** Presence actions on the wire. */
export const PresenceAction = { ABSENT: 0, PRESENT: 1, ENTER: 2, LEAVE: 3, UPDATE: 4 } as const

export interface PresenceMessage {
  id: string
  action: number
  clientId: string
  connectionId: string
  timestamp: number
  data?: string | Uint8Array
  encoding?: string
  extras?: Record<string, unknown>
}

export type Capability = Record<string, string[]>

export interface Account {
  id: string
  name: string
  created: number
  /** Per-account rate-limit overrides (per second; management classes per minute). */
  limits?: Partial<
    Record<
      'messages' | 'history' | 'tokenRequests' | 'objectReads' | 'objectWrites' | 'management' | 'managementStats',
      number
    >
  >
}

export interface App {
  id: string
  accountId: string
  name: string
  status: 'enabled' | 'disabled'
  tlsOnly: boolean
  /** Limits of this app tighter than the node's (sandbox `limits`). */
  limits?: { presenceMaxMembers?: number }
  /** Made by sandbox provisioning: the hosted sandbox's test hooks (`_forceNack`) apply to it alone. */
  sandbox?: true
  created: number
  modified: number
}

export interface ApiKey {
  appId: string
  id: string
  name: string
  secret: string
  capability: Capability
  status: 0 | 1
  revocableTokens: boolean
  created: number
  modified: number
}

export interface Namespace {
  appId: string
  id: string
  persisted: boolean
  pushEnabled: boolean
  mutableMessages: boolean
  [flag: string]: unknown
}

export interface AccessToken {
  id: string
  accountId: string
  name: string
  /** sha256 of the token string; the token itself is never stored. */
  hash: string
  capabilities: string[]
  created: number
}

export type Direction = 'forwards' | 'backwards'

export interface HistoryQuery {
  start?: number
  end?: number
  limit: number
  direction: Direction
  /** Serial of the last item of the previous page: the next page starts strictly after it. */
  cursor?: string
  /**
   * Channel history: only messages (default); `versions`: messages and their later versions
   * (entries of kind `mutation`: what a rewind replays); `all`: every entry of the log.
   */
  entries?: 'messages' | 'versions' | 'all'
}

/**
 * An integration rule: channel messages (or, `channel.presence`, presence events) whose channel
 * matches `source.channelFilter` go to `target`.
 */
export interface Rule {
  id: string
  appId: string
  ruleType: 'http' | 'amqp'
  requestMode: 'single' | 'batch'
  status: 'enabled' | 'disabled'
  source: { channelFilter: string; type: 'channel.message' | 'channel.presence' }
  /** http: url (+ headers); amqp: queueId of one of the app's queues. */
  target: { url?: string; headers?: Array<{ name: string; value: string }>; queueId?: string; enveloped?: boolean }
  created: number
  modified: number
}

/** A queue of the app, fed by amqp rules, read and acknowledged over HTTP. */
export interface Queue {
  id: string
  appId: string
  name: string
  region: string
  /** Minutes a message may wait before it expires. */
  ttl: number
  maxLength: number
  created: number
}

export interface QueuedMessage {
  deliveryTag: string
  channel: string
  message: Record<string, unknown>
  enqueued: number
  /** Times it was handed out without being acknowledged before. */
  redelivered: number
}

/**
 * The answer of a batch operation (batch publish, batch presence, token revocation): one result
 * per item, each a success or `{..., error}`, with the counts of both.
 */
export interface BatchResult<T, F = { channel: string; error: ErrorBody }> {
  successCount: number
  failureCount: number
  results: Array<T | F>
}

/**
 * A token revocation: the tokens of key `keyName` that match `target` and were issued before
 * `issuedBefore` are refused from `appliesAt` on. `target` is `clientId:<id>`,
 * `revocationKey:<key>` or `channel:<resource name of the token's capability>`.
 */
export interface TokenRevocation {
  keyName: string
  target: string
  issuedBefore: number
  appliesAt: number
  /** From this time on nothing it matches can still be valid (revocable tokens live at most 1 h): it may be forgotten. */
  expires: number
}
