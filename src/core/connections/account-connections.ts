import { GatewayError } from '../../errors'
import { zeroCounts } from '../fanout/occupancy'
import type { Limits } from '../limits/limits'
import type { OccupancyStore } from '../ports'

/** The occupancy store's "app" under which accounts' connections are counted (one entry per account). */
const COUNTED_AS = '[accounts]'

export interface AccountConnectionSettings {
  /** Live connections one account may hold on all nodes together (ACCOUNT_MAX_CONNECTIONS); 0: no bound. */
  accountMaxConnections: number
}

/**
 * The account's connection bounds of the limit profiles, for every transport that makes a
 * connection (realtime WebSocket and comet, event streams): a new one is admitted unless the
 * account holds ACCOUNT_MAX_CONNECTIONS live (403 / 40111) or opened ACCOUNT_MAX_CONNECTION_RATE
 * in the last second (429 / 80021). Live connections are counted per node and reported to the
 * store every node reports to (the occupancy store: each node's count, the fresh ones added up,
 * a dead node's gone after its staleness bound), so the bound holds across nodes; without a store
 * (one node) this node's count is the whole. Connects racing on several nodes may pass the bound
 * by the ones in flight: it is checked, not reserved. With no bound set nothing is counted.
 */
export class AccountConnections {
  private readonly local = new Map<string, number>()

  constructor(
    private readonly store: OccupancyStore | undefined,
    private readonly limits: Pick<Limits, 'connectionRated' | 'takeConnection'>,
    private readonly s: AccountConnectionSettings,
  ) {}

  /** Whether live connections are counted (ACCOUNT_MAX_CONNECTIONS set): else nothing is reported. */
  private get counted(): boolean {
    return this.s.accountMaxConnections > 0
  }

  /** Whether a new connection is bounded at all (either setting): callers skip `admit`, and its await, when not. */
  get bounded(): boolean {
    return this.counted || this.limits.connectionRated
  }

  /** Admits a new connection of the account, or throws 40111 / 80021 (nothing is counted yet: `opened` does). */
  async admit(accountId: string): Promise<void> {
    const max = this.s.accountMaxConnections
    if (this.counted && (await this.count(accountId)) >= max)
      throw new GatewayError(40111, `Account connection limit exceeded (at most ${max} connections)`)
    if (this.limits.connectionRated) await this.limits.takeConnection(accountId)
  }

  opened(accountId: string): void {
    if (this.counted) this.set(accountId, (this.local.get(accountId) ?? 0) + 1)
  }

  closed(accountId: string): void {
    if (this.counted) this.set(accountId, Math.max(0, (this.local.get(accountId) ?? 0) - 1))
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
