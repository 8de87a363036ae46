import type { RevocationStore } from '../../core/ports'
import type { TokenRevocation } from '../../core/types'

const NONE: readonly TokenRevocation[] = []

/** Does `b` make `a` redundant: same target, covering every token `a` covers, from no later on? */
const covers = (b: TokenRevocation, a: TokenRevocation) =>
  b.target === a.target && b.issuedBefore >= a.issuedBefore && b.appliesAt <= a.appliesAt

/**
 * Token revocations served from memory (token verification reads them on every request of a
 * revocable token) and written through to a durable, shared store by the subclass. `apply` is how
 * a subclass feeds in what it loaded or learned from another node; listeners hear of every
 * revocation, local or remote. Per key only revocations no other one covers are kept, and expired
 * ones are dropped when read, so memory follows what is in force (at most an hour's worth).
 */
export abstract class CachedRevocationStore implements RevocationStore {
  private byKey = new Map<string, TokenRevocation[]>()
  private listeners = new Set<(rs: TokenRevocation[]) => void>()

  /** Stores revocations durably (and tells the other nodes). */
  protected abstract persist(rs: TokenRevocation[]): Promise<void>

  /** Puts revocations into memory and tells the listeners. */
  protected apply(rs: TokenRevocation[]) {
    if (rs.length === 0) return
    for (const r of rs) {
      const list = this.byKey.get(r.keyName) ?? []
      if (list.some((x) => covers(x, r))) continue
      this.byKey.set(r.keyName, [...list.filter((x) => !covers(r, x)), r])
    }
    for (const l of this.listeners) l(rs)
  }

  async add(rs: TokenRevocation[]): Promise<void> {
    await this.persist(rs)
    this.apply(rs)
  }

  forKey(keyName: string, now: number): readonly TokenRevocation[] {
    const list = this.byKey.get(keyName)
    if (!list) return NONE
    if (list.every((r) => r.expires > now)) return list
    const live = list.filter((r) => r.expires > now)
    if (live.length) this.byKey.set(keyName, live)
    else this.byKey.delete(keyName)
    return live
  }

  onChange(listener: (rs: TokenRevocation[]) => void) {
    this.listeners.add(listener)
    return () => {
      this.listeners.delete(listener)
    }
  }
}
