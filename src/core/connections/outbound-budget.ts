import { takeTokens, type Bucket } from '../limits/token-bucket'
import type { Clock } from '../ports'

/**
 * A connection's outbound message budget (REALTIME_MAX_OUTBOUND_RATE): `rate` messages a second
 * refilled continuously, a second of it as burst (the rate limits' token bucket). Unlike a
 * publish budget it is taken in part: of a batch, what the budget holds goes and the rest is
 * dropped (the hosted service's 42915, told to the client as a continuity loss, 80020).
 */
export class OutboundBudget {
  private bucket?: Bucket
  private readonly burst: number

  constructor(
    readonly rate: number,
    private readonly clock: Clock,
  ) {
    this.burst = Math.max(rate, 1)
  }

  /** How many of `n` messages may go now (those are taken). */
  take(n: number): number {
    // refilled to now (taking nothing), then as much of `n` as it holds
    const { bucket } = takeTokens(this.bucket, 0, this.rate, this.burst, this.clock.now())
    const k = Math.min(n, Math.floor(bucket.tokens))
    this.bucket = { tokens: bucket.tokens - k, at: bucket.at }
    return k
  }
}
