import { takeTokens, type Bucket } from '../../core/limits/token-bucket'
import type { RateLimitStore } from '../../core/ports'

/** Token buckets in memory (single node). */
export class MemoryRateLimitStore implements RateLimitStore {
  private buckets = new Map<string, Bucket>()

  async take(key: string, cost: number, rate: number, burst: number, now: number) {
    const r = takeTokens(this.buckets.get(key), cost, rate, burst, now)
    if (this.buckets.size > 100_000) this.buckets.clear()
    this.buckets.set(key, r.bucket)
    return { ok: r.ok, remaining: r.remaining, retryAfterMs: r.retryAfterMs }
  }
}
