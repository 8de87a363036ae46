import { GatewayError } from '../../errors'
import { metrics } from '../../lib/metrics'
import type { ChargeResult, Clock, ControlStore, RateLimitStore } from '../ports'
import { isPerMinute, type LimitCharge, type LimitClass, type Limits } from './limits'

export interface LimitSettings {
  rateLimits: boolean
  rateLimitBurstSeconds: number
  limitMessagesPerSecond: number
  limitHistoryPerSecond: number
  limitTokenRequestsPerSecond: number
  limitObjectReadsPerSecond: number
  limitObjectWritesPerSecond: number
  limitManagementPerMinute: number
  limitManagementStatsPerMinute: number
  /** Messages a second one channel takes from all its publishers together; 0: no bound. */
  channelMaxPublishRate: number
  /** New connections a second per account, realtime and event streams (a realtime resume is not new); 0: no bound. */
  accountMaxConnectionRate: number
  /** Channels an account may newly activate a second (an attach of a channel not active); 0: no bound. */
  accountMaxNewChannelRate: number
}

/**
 * A rate as the X-RateLimit-Limit header and error messages give it: per second, to 3 decimals,
 * or 3 significant digits below 1 (an override of one request per hour is not "0/s").
 */
const perSecond = (rate: number) => String(rate < 1 ? Number(rate.toPrecision(3)) : Math.round(rate * 1000) / 1000)

const refused = metrics.counter('gateway_rate_limited_total', 'Requests refused by a rate limit, by limit class.')

/**
 * Per-account rate limits as token buckets: `rate` per second refilled continuously, capacity
 * one second of the rate (one minute for the per-minute management classes) times
 * RATE_LIMIT_BURST_SECONDS, so a steady load at the limit is always admitted and anything above
 * it is trimmed to the limit. A request costs its number of messages (publishes) or 1, and is either
 * admitted whole or refused whole (nothing of it happens) with 429 / 42910 and Retry-After.
 */
export class RateLimiter implements Limits {
  private overrides = new Map<string, Partial<Record<LimitClass, number>>>()
  /**
   * Per account, its buckets' keys (`<account>:<class>`) made once: one string per bucket, not
   * one per charge, so that the stores' maps of buckets find it by its hash already computed.
   */
  private readonly bucketKeys = new Map<string, Partial<Record<LimitClass, string>>>()

  constructor(
    private readonly store: RateLimitStore,
    private readonly control: ControlStore,
    private readonly clock: Clock,
    private readonly s: LimitSettings,
  ) {
    control.onChange((e) => {
      if (e.kind === 'account') {
        this.overrides.clear()
        this.bucketKeys.clear()
      }
    })
  }

  get enabled() {
    return this.s.rateLimits
  }

  /** Requests per second of `cls` (per-minute classes converted), before per-account overrides. */
  defaultRate(cls: LimitClass): number {
    switch (cls) {
      case 'messages':
        return this.s.limitMessagesPerSecond
      case 'history':
        return this.s.limitHistoryPerSecond
      case 'tokenRequests':
        return this.s.limitTokenRequestsPerSecond
      case 'objectReads':
        return this.s.limitObjectReadsPerSecond
      case 'objectWrites':
        return this.s.limitObjectWritesPerSecond
      case 'management':
        return this.s.limitManagementPerMinute / 60
      case 'managementStats':
        return this.s.limitManagementStatsPerMinute / 60
    }
  }

  /** The account's overrides of the default rates, read once (until an account changes). */
  private async overridesOf(accountId: string): Promise<Partial<Record<LimitClass, number>>> {
    let o = this.overrides.get(accountId)
    if (!o) {
      o = (await this.control.getAccount(accountId))?.limits ?? {}
      this.overrides.set(accountId, o)
    }
    return o
  }

  /**
   * The charge of `cost` to the account's bucket of `cls`, for the store (or a broker publish) to
   * take; undefined when limits are off. Throws 429 when `cost` exceeds the whole bucket. At once
   * when the account's overrides are cached (every request after its account's first): a publish
   * on an embedded node then takes no promise turn for its charge.
   */
  charge(accountId: string, cls: LimitClass, cost = 1): LimitCharge | undefined | Promise<LimitCharge | undefined> {
    if (!this.s.rateLimits) return undefined
    const o = this.overrides.get(accountId)
    if (!o) return this.overridesOf(accountId).then((known) => this.chargeWith(known, accountId, cls, cost))
    return this.chargeWith(o, accountId, cls, cost)
  }

  private chargeWith(
    o: Partial<Record<LimitClass, number>>,
    accountId: string,
    cls: LimitClass,
    cost: number,
  ): LimitCharge {
    const v = o[cls]
    const rate = v === undefined ? this.defaultRate(cls) : isPerMinute(cls) ? v / 60 : v
    // per-minute classes hold a minute's worth, per-second classes a second's (times the burst setting)
    const window = isPerMinute(cls) ? 60 : 1
    const burst = Math.max(rate * window * this.s.rateLimitBurstSeconds, 1)
    if (cost > burst) {
      refused.inc({ class: cls })
      throw new GatewayError(
        42910,
        `Rate limit exceeded: ${cost} ${cls} in one request is more than the burst of ${Math.floor(burst)}`,
        {
          headers: {
            'retry-after': String(Math.ceil(this.s.rateLimitBurstSeconds)),
            'x-ratelimit-limit': perSecond(rate),
          },
        },
      )
    }
    let keys = this.bucketKeys.get(accountId)
    if (!keys) this.bucketKeys.set(accountId, (keys = {}))
    const key = (keys[cls] ??= `${accountId}:${cls}`)
    return { key, cls, cost, rate, burst, now: this.clock.now() }
  }

  /** Throws 429 (nothing was taken) when the store refused the charge. */
  settle(c: LimitCharge, r: ChargeResult): void {
    if (r.ok) return
    refused.inc({ class: c.cls })
    const rate = perSecond(c.rate)
    throw new GatewayError(42910, `Rate limit exceeded (${c.cls}: ${rate}/s for this account)`, {
      headers: {
        'retry-after': String(Math.max(1, Math.ceil(r.retryAfterMs / 1000))),
        'x-ratelimit-limit': rate,
        'x-ratelimit-remaining': String(Math.floor(r.remaining)),
      },
    })
  }

  get channelRated() {
    return this.s.channelMaxPublishRate > 0
  }

  /**
   * A channel's publish budget: CHANNEL_MAX_PUBLISH_RATE messages a second, a second of it as
   * burst, in the store's bucket of the channel (shared by all nodes; per app, so tenants never
   * share one). Independent of RATE_LIMITS, as the per-connection inbound rate is: a limit of the
   * profile (the hosted 50/s), not an account's budget.
   */
  async takeChannel(appId: string, channel: string, cost: number): Promise<void> {
    await this.takeBound(`channel:${appId}:${channel}`, cost, this.s.channelMaxPublishRate, 'channel', (why, retryS) =>
      rateError(42913, this.s.channelMaxPublishRate, `${why} on this channel (all its publishers together)`, retryS),
    )
  }

  get connectionRated() {
    return this.s.accountMaxConnectionRate > 0
  }

  /** A new connection of the account, realtime or event stream (ACCOUNT_MAX_CONNECTION_RATE a second, as the channel budget). */
  async takeConnection(accountId: string): Promise<void> {
    await this.takeBound(`connect:${accountId}`, 1, this.s.accountMaxConnectionRate, 'connection', (why, retryS) =>
      rateError(80021, this.s.accountMaxConnectionRate, `${why} for new connections of this account`, retryS),
    )
  }

  get newChannelRated() {
    return this.s.accountMaxNewChannelRate > 0
  }

  /** A channel the account newly activates (ACCOUNT_MAX_NEW_CHANNEL_RATE a second, as the channel budget). */
  async takeNewChannel(accountId: string): Promise<void> {
    await this.takeBound(`newchannel:${accountId}`, 1, this.s.accountMaxNewChannelRate, 'newChannel', (why, retryS) =>
      rateError(90021, this.s.accountMaxNewChannelRate, `${why} for new channels of this account`, retryS),
    )
  }

  /** Takes `cost` from the bucket `key` of `rate` a second (a second as burst), else throws `refuse(why)`. */
  private async takeBound(
    key: string,
    cost: number,
    rate: number,
    what: string,
    refuse: (why: string, retryS: number) => GatewayError,
  ): Promise<void> {
    if (rate <= 0) return
    const burst = Math.max(rate, 1)
    if (cost > burst) throw refuse(`${cost} in one request is more than the burst of ${burst}`, 1)
    const r = await this.store.take({ key, cost, rate, burst, now: this.clock.now() })
    if (r.ok) return
    refused.inc({ class: what })
    throw refuse(`at most ${perSecond(rate)} a second`, r.retryAfterMs / 1000)
  }

  /** Takes `cost` from the account's bucket of `cls`, or throws 429 and takes nothing. */
  async take(accountId: string, cls: LimitClass, cost = 1): Promise<void> {
    const c = await this.charge(accountId, cls, cost)
    if (c) this.settle(c, await this.store.take(c))
  }
}

/** A 429 of a bound of the profile (a channel's publishes, an account's new connections or channels). */
const rateError = (code: 42913 | 80021 | 90021, rate: number, why: string, retryS: number) =>
  new GatewayError(code, `Rate limit exceeded: ${why}`, {
    headers: { 'retry-after': String(Math.max(1, Math.ceil(retryS))), 'x-ratelimit-limit': perSecond(rate) },
  })
