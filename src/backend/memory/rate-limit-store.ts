import { fullAt, takeTokens, type Bucket } from '../../core/limits/token-bucket'
import type { Charge, ChargeResult, RateLimitStore } from '../../core/ports'

/** Buckets kept before the first sweep; the next sweep waits until the map has doubled. */
const SWEEP_AT = 10_000

/**
 * Token buckets in memory (single node). Memory stays bounded by the buckets in use: when the
 * map grows past its mark, buckets that have refilled to full (no different from absent ones)
 * are dropped; a bucket still short of tokens is never forgotten, so no account gets a fresh burst.
 */
export class MemoryRateLimitStore implements RateLimitStore {
  private buckets = new Map<string, Bucket & { full: number }>()
  private sweepAt = SWEEP_AT

  async take(c: Charge): Promise<ChargeResult> {
    return this.takeNow(c)
  }

  /** `take` without a promise, for the memory broker's publish (charged in the same step as the append). */
  takeNow(c: Charge): ChargeResult {
    const r = takeTokens(this.buckets.get(c.key), c.cost, c.rate, c.burst, c.now)
    this.buckets.set(c.key, { ...r.bucket, full: fullAt(r.bucket, c.rate, c.burst) })
    if (this.buckets.size >= this.sweepAt) this.sweep(c.now)
    return { ok: r.ok, remaining: r.remaining, retryAfterMs: r.retryAfterMs }
  }

  /** How many buckets are held (tests of the bound). */
  get size() {
    return this.buckets.size
  }

  private sweep(now: number) {
    for (const [key, b] of this.buckets) if (b.full <= now) this.buckets.delete(key)
    this.sweepAt = Math.max(SWEEP_AT, this.buckets.size * 2)
  }
}
