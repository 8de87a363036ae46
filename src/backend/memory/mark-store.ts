import type { Clock, MarkStore } from '../../core/ports'

/** Marks kept at most, all scopes together: past it the oldest recorded go first. */
export const MAX_MARKS = 200_000

interface Entry {
  until: number
  scope: string | undefined
}

/**
 * Marks with expiry, in memory (single node). Bounded per scope and in all, oldest recorded
 * first: marks may be forgotten early (unlike nonces, which live in their own store and are
 * never dropped while live).
 */
export class MemoryMarkStore implements MarkStore {
  /** Every record in the order recorded. */
  private all = new Map<string, Entry>()
  /** The keys of each scope in the order recorded. */
  private scopes = new Map<string, Set<string>>()

  constructor(
    private readonly clock: Clock,
    private readonly max = MAX_MARKS,
  ) {}

  async add(scope: string | undefined, key: string, ttlMs: number, maxPerScope: number): Promise<void> {
    const now = this.clock.now()
    this.remove(key) // re-inserted last: the maps' order is the order of recording
    this.all.set(key, { until: now + ttlMs, scope })
    if (scope !== undefined) {
      let keys = this.scopes.get(scope)
      if (!keys) this.scopes.set(scope, (keys = new Set()))
      keys.add(key)
      for (const k of keys) {
        if (keys.size <= maxPerScope) break
        this.remove(k)
      }
    }
    if (this.all.size > this.max) this.sweep(now)
  }

  async has(key: string): Promise<boolean> {
    const e = this.all.get(key)
    return e !== undefined && e.until > this.clock.now()
  }

  private remove(key: string): void {
    const e = this.all.get(key)
    if (!e) return
    this.all.delete(key)
    if (e.scope === undefined) return
    const keys = this.scopes.get(e.scope)
    keys?.delete(key)
    if (keys?.size === 0) this.scopes.delete(e.scope)
  }

  private sweep(now: number): void {
    for (const [k, e] of this.all) if (e.until <= now) this.remove(k)
    for (const k of this.all.keys()) {
      if (this.all.size <= this.max * 0.9) break
      this.remove(k)
    }
  }
}
