/** One token bucket step (shared by the memory store and mirrored by the Redis script). */
export interface Bucket {
  tokens: number
  at: number
}

/**
 * Refills `b` to `now` and takes `cost` if it is there. The bucket's time never goes back: a node
 * whose clock is behind (`now` before `b.at`) refills nothing and leaves `at` as it was, so nodes
 * with skewed clocks taking turns on one bucket cannot refill the same interval twice.
 */
export function takeTokens(b: Bucket | undefined, cost: number, rate: number, burst: number, now: number) {
  const at = b ? Math.max(now, b.at) : now
  const tokens = b ? Math.min(burst, b.tokens + ((at - b.at) * rate) / 1000) : burst
  if (tokens >= cost)
    return { bucket: { tokens: tokens - cost, at }, ok: true, remaining: tokens - cost, retryAfterMs: 0 }
  return { bucket: { tokens, at }, ok: false, remaining: tokens, retryAfterMs: ((cost - tokens) * 1000) / rate }
}

/** When a bucket left as `b` is full again, i.e. no different from a bucket never touched (ms). */
export const fullAt = (b: Bucket, rate: number, burst: number) => b.at + ((burst - b.tokens) * 1000) / rate
