/** Domain records shared by the core and the backends. Plain data; no behaviour. */

/** A channel message as stored and delivered. `data` is a string or bytes, never an object. */
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
  /** Pub/Sub action on the wire: 0 create, 1 update, 2 delete. Absent means 0. */
  action?: number
}

/** A message before the broker has given it a serial and timestamp. */
export type MessageDraft = Omit<Message, 'serial' | 'timestamp'> & { timestamp?: number }

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
  limits?: Partial<Record<'messages' | 'history' | 'tokenRequests' | 'objectReads' | 'objectWrites' | 'management' | 'managementStats', number>>
}

export interface App {
  id: string
  accountId: string
  name: string
  status: 'enabled' | 'disabled'
  tlsOnly: boolean
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
}

/** An integration rule: channel messages whose channel matches `source.channelFilter` go to `target`. */
export interface Rule {
  id: string
  appId: string
  ruleType: 'http' | 'amqp'
  requestMode: 'single' | 'batch'
  status: 'enabled' | 'disabled'
  source: { channelFilter: string; type: 'channel.message' }
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
