import type { Clock, NonceStore } from '../../core/ports'

/** Seen nonces with expiry, in memory (single node). */
export class MemoryNonceStore implements NonceStore {
  private seen = new Map<string, number>()
  constructor(private readonly clock: Clock) {}

  async claim(key: string, ttlMs: number): Promise<boolean> {
    const now = this.clock.now()
    if (this.seen.size > 10_000) for (const [k, until] of this.seen) if (until <= now) this.seen.delete(k)
    const until = this.seen.get(key)
    if (until !== undefined && until > now) return false
    this.seen.set(key, now + ttlMs)
    return true
  }
}
