import type { Clock, NonceClaim, NonceStore } from '../../core/ports'

/** Live keys kept at most, all scopes together (a new claim past it is refused, never room made). */
export const MAX_LIVE_NONCES = 200_000

/** The keys of one scope in the order recorded, and the earliest expiry among them (a lower bound). */
interface Scope {
  keys: Map<string, number>
  earliest: number
}

/**
 * Seen nonces with expiry, in memory (single node). Bounded per scope and in all by refusing new
 * claims: a live key is never dropped to make room, since a dropped nonce would let its signed
 * token request be replayed.
 */
export class MemoryNonceStore implements NonceStore {
  private scopes = new Map<string, Scope>()
  private size = 0
  /** No key expires before this: a full store is not swept again until then. */
  private earliest = Infinity

  constructor(
    private readonly clock: Clock,
    private readonly maxLive = MAX_LIVE_NONCES,
  ) {}

  async claim(scopeName: string, key: string, ttlMs: number, maxPerScope: number): Promise<NonceClaim> {
    const now = this.clock.now()
    let scope = this.scopes.get(scopeName)
    const until = scope?.keys.get(key)
    if (until !== undefined && until > now) return 'seen'
    if (scope && until !== undefined) this.remove(scope, key)
    if (scope && scope.keys.size >= maxPerScope && !this.sweepScope(scope, now, maxPerScope)) return 'scopeFull'
    if (this.size >= this.maxLive && !this.sweepAll(now)) return 'storeFull'
    scope = this.scopes.get(scopeName) // a sweep may have dropped an emptied scope
    if (!scope) this.scopes.set(scopeName, (scope = { keys: new Map(), earliest: Infinity }))
    const expires = now + ttlMs
    scope.keys.set(key, expires)
    scope.earliest = Math.min(scope.earliest, expires)
    this.earliest = Math.min(this.earliest, expires)
    this.size++
    return 'claimed'
  }

  async has(scopeName: string, key: string): Promise<boolean> {
    const until = this.scopes.get(scopeName)?.keys.get(key)
    return until !== undefined && until > this.clock.now()
  }

  private remove(scope: Scope, key: string): void {
    if (scope.keys.delete(key)) this.size--
  }

  /**
   * Drops the scope's expired keys; true when that made room. Swept only once one of them can
   * have expired (`earliest`), so a scope at its bound costs nothing more per refused claim.
   */
  private sweepScope(scope: Scope, now: number, max: number): boolean {
    if (scope.earliest > now) return false
    let earliest = Infinity
    for (const [k, until] of scope.keys) {
      if (until <= now) this.remove(scope, k)
      else earliest = Math.min(earliest, until)
    }
    scope.earliest = earliest
    return scope.keys.size < max
  }

  /** Drops every expired key (and emptied scope); true when that made room. */
  private sweepAll(now: number): boolean {
    if (this.earliest > now) return false
    let earliest = Infinity
    for (const [name, scope] of this.scopes) {
      this.sweepScope(scope, now, Infinity)
      if (scope.keys.size === 0) this.scopes.delete(name)
      else earliest = Math.min(earliest, scope.earliest)
    }
    this.earliest = earliest
    return this.size < this.maxLive
  }
}
