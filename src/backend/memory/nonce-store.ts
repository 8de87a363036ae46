import type { Clock, NonceStore } from '../../core/ports'

/** Entries kept at most: past it, expired ones are swept and then the oldest recorded go first. */
const MAX_ENTRIES = 200_000

/** Seen nonces with expiry, in memory (single node). */
export class MemoryNonceStore implements NonceStore {
  private seen = new Map<string, number>()
  constructor(private readonly clock: Clock) {}

  async claim(key: string, ttlMs: number): Promise<boolean> {
    const now = this.clock.now()
    const until = this.seen.get(key)
    if (until !== undefined && until > now) return false
    this.seen.delete(key) // re-inserted last: the map's order is the order of recording
    this.seen.set(key, now + ttlMs)
    if (this.seen.size > MAX_ENTRIES) this.sweep(now)
    return true
  }

  async has(key: string): Promise<boolean> {
    const until = this.seen.get(key)
    return until !== undefined && until > this.clock.now()
  }

  private sweep(now: number): void {
    for (const [k, until] of this.seen) if (until <= now) this.seen.delete(k)
    for (const k of this.seen.keys()) {
      if (this.seen.size <= MAX_ENTRIES * 0.9) break
      this.seen.delete(k)
    }
  }
}
