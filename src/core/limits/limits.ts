import type { Charge, ChargeResult } from '../ports'

/** The limit classes of the spec's Limits table. */
export type LimitClass =
  'messages' | 'history' | 'tokenRequests' | 'objectReads' | 'objectWrites' | 'management' | 'managementStats'

/** A charge of one limit class (the class names the 429). */
export type LimitCharge = Charge & { cls: LimitClass }

export const LIMIT_CLASSES: LimitClass[] = [
  'messages',
  'history',
  'tokenRequests',
  'objectReads',
  'objectWrites',
  'management',
  'managementStats',
]

/** The management classes are set per minute (and their buckets hold a minute's worth); the rest per second. */
export const isPerMinute = (cls: LimitClass) => cls === 'management' || cls === 'managementStats'

/**
 * The one way services meet rate limits (the account's RateLimiter implements it; `noLimits`
 * serves tests of a service alone). A request is charged its cost in one class and is admitted
 * whole or refused whole with 429 / 42910.
 */
export interface Limits {
  /** False when limits are off (RATE_LIMITS=off): callers may skip building charges. */
  readonly enabled: boolean
  /** Takes `cost` from the account's bucket of `cls`, or throws 429 and takes nothing. */
  take(accountId: string, cls: LimitClass, cost?: number): Promise<void>
  /**
   * A charge for a store to take in its own atomic step (a broker publish); undefined when off.
   * Made at once (no promise) when the account's limits are known, as they are after its first
   * request; a charge over the whole bucket is thrown then (or its promise rejects).
   */
  charge(accountId: string, cls: LimitClass, cost?: number): LimitCharge | undefined | Promise<LimitCharge | undefined>
  /** Throws 429 when the store refused `c`. */
  settle(c: LimitCharge, r: ChargeResult): void
  /** True when publishes are bounded per channel (CHANNEL_MAX_PUBLISH_RATE): callers may skip `takeChannel`. */
  readonly channelRated: boolean
  /**
   * Takes `cost` messages from the channel's publish budget (all its publishers together, every
   * node), or throws 429 / 42913 and takes nothing.
   */
  takeChannel(appId: string, channel: string, cost: number): Promise<void>
  /** True when new connections are bounded per account (ACCOUNT_MAX_CONNECTION_RATE). */
  readonly connectionRated: boolean
  /** Takes a new connection (realtime or event stream) from the account's budget, or throws 429 / 80021. */
  takeConnection(accountId: string): Promise<void>
  /** True when new channels are bounded per account (ACCOUNT_MAX_NEW_CHANNEL_RATE). */
  readonly newChannelRated: boolean
  /** Takes a newly active channel from the account's budget, or throws 429 / 90021. */
  takeNewChannel(accountId: string): Promise<void>
}

export const noLimits: Limits = {
  enabled: false,
  take: async () => {},
  charge: () => undefined,
  settle: () => {},
  channelRated: false,
  takeChannel: async () => {},
  connectionRated: false,
  takeConnection: async () => {},
  newChannelRated: false,
  takeNewChannel: async () => {},
}
