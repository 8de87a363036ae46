import { zeroCounts } from '../fanout/occupancy'
import type { OccupancyStore } from '../ports'

/** The occupancy store's "app" under which accounts' connections are counted (one entry per account). */
const COUNTED_AS = '[accounts]'

/**
 * Live realtime connections per account, for ACCOUNT_MAX_CONNECTIONS: this node's own counts,
 * reported to the store every node reports to (the occupancy store: each node's count, the fresh
 * ones added up, a dead node's gone after its staleness bound), so the bound holds across nodes.
 * Without a store (one node) this node's count is the whole. Connects racing on several nodes
 * may pass the bound by the ones in flight: it is checked, not reserved.
 */
export class AccountConnections {
  private readonly local = new Map<string, number>()

  constructor(private readonly store: OccupancyStore | undefined) {}

  opened(accountId: string): void {
    this.set(accountId, (this.local.get(accountId) ?? 0) + 1)
  }

  closed(accountId: string): void {
    this.set(accountId, Math.max(0, (this.local.get(accountId) ?? 0) - 1))
  }

  /** The account's live connections on every node. */
  async count(accountId: string): Promise<number> {
    if (!this.store) return this.local.get(accountId) ?? 0
    return (await this.store.count(COUNTED_AS, accountId)).connections
  }

  private set(accountId: string, n: number) {
    if (n > 0) this.local.set(accountId, n)
    else this.local.delete(accountId)
    this.store?.report(COUNTED_AS, accountId, { ...zeroCounts(), connections: n })
  }
}
