import type { ActiveChannelStore } from '../../core/ports'

/** Accounts held before the first sweep of idle ones; the next sweep waits until the map has doubled. */
const SWEEP_AT = 1000

/**
 * The channels active on each account, in memory (one node): per account, member -> when it was
 * last named, oldest first (naming one again moves it to the end), so forgetting the stale ones
 * stops at the first fresh one. Accounts with nothing active are swept when the map has grown, so
 * memory stays bounded by the channels active.
 */
export class MemoryActiveChannelStore implements ActiveChannelStore {
  private readonly accounts = new Map<string, Map<string, number>>()
  private sweepAt = SWEEP_AT

  async has(accountId: string, member: string, now: number, staleMs: number): Promise<boolean> {
    const at = this.accounts.get(accountId)?.get(member)
    return at !== undefined && at > now - staleMs
  }

  async add(
    accountId: string,
    member: string,
    now: number,
    max: number,
    staleMs: number,
  ): Promise<'known' | 'added' | 'full'> {
    const members = this.live(accountId, now, staleMs)
    const known = members.has(member)
    if (!known && max > 0 && members.size >= max) return 'full'
    name(members, member, now)
    return known ? 'known' : 'added'
  }

  async touch(accountId: string, members: string[], now: number, staleMs: number): Promise<void> {
    const live = this.live(accountId, now, staleMs)
    for (const m of members) name(live, m, now)
  }

  /** The account's members, the stale ones forgotten. */
  private live(accountId: string, now: number, staleMs: number): Map<string, number> {
    let members = this.accounts.get(accountId)
    if (!members) {
      if (this.accounts.size >= this.sweepAt) this.sweep(now, staleMs)
      this.accounts.set(accountId, (members = new Map()))
    }
    forgetStale(members, now, staleMs)
    return members
  }

  private sweep(now: number, staleMs: number) {
    for (const [id, members] of this.accounts) {
      forgetStale(members, now, staleMs)
      if (members.size === 0) this.accounts.delete(id)
    }
    this.sweepAt = Math.max(SWEEP_AT, this.accounts.size * 2)
  }
}

/** Names `member` at `now` (never earlier than it was), moving it to the end. */
function name(members: Map<string, number>, member: string, now: number) {
  const at = Math.max(now, members.get(member) ?? now)
  members.delete(member)
  members.set(member, at)
}

function forgetStale(members: Map<string, number>, now: number, staleMs: number) {
  for (const [m, at] of members) {
    if (at > now - staleMs) break
    members.delete(m)
  }
}
