/** One token bucket step (shared by the memory store and mirrored by the Redis script). */
export interface Bucket { tokens: number; at: number }

export function takeTokens(b: Bucket | undefined, cost: number, rate: number, burst: number, now: number) {
  const elapsed = b ? Math.max(0, now - b.at) : 0
  const tokens = b ? Math.min(burst, b.tokens + (elapsed * rate) / 1000) : burst
  if (tokens >= cost) return { bucket: { tokens: tokens - cost, at: now }, ok: true, remaining: tokens - cost, retryAfterMs: 0 }
  return { bucket: { tokens, at: now }, ok: false, remaining: tokens, retryAfterMs: ((cost - tokens) * 1000) / rate }
}
