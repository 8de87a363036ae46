import { GatewayError } from '../../errors'
import type { Principal } from '../auth/principal'
import type { Occupancy } from './occupancy'
import type { ActiveChannelStore, Clock, Timers } from '../ports'
import type { Limits } from '../limits/limits'

/** How long a channel no node names again stays counted as active (ms). */
export const ACTIVE_CHANNEL_STALE_MS = 30_000
/** How often a node names again the channels it holds attachments on (ms). */
const REFRESH_MS = 10_000

export interface ActiveChannelSettings {
  /** Active channels one account may have on all nodes together (ACCOUNT_MAX_CHANNELS); 0: no bound. */
  accountMaxChannels: number
}

/**
 * The account's channel bounds of the limit profiles: a channel is active on its account while
 * any node holds an attachment on it (a realtime attach, an event stream) and for up to
 * ACTIVE_CHANNEL_STALE_MS after, as the hosted service counts channels "while any client remains
 * attached". An attach that would activate a channel is refused past ACCOUNT_MAX_CHANNELS (403 /
 * 40114) or past ACCOUNT_MAX_NEW_CHANNEL_RATE new channels a second (429 / 90021); a channel
 * active already (on any node) is never refused. With neither bound set nothing is counted.
 */
export class ActiveChannels {
  /** Channels this node named, by member (`<appId>:<channel>`), while it holds attachments on them. */
  private readonly mine = new Map<string, { accountId: string; appId: string; channel: string }>()
  private stopRefresh?: () => void

  constructor(
    private readonly store: ActiveChannelStore,
    private readonly occupancy: Occupancy,
    private readonly limits: Pick<Limits, 'newChannelRated' | 'takeNewChannel'>,
    private readonly clock: Clock,
    private readonly timers: Timers,
    private readonly s: ActiveChannelSettings,
  ) {}

  /** Whether channels are counted (a bound is set). */
  get bounded(): boolean {
    return this.s.accountMaxChannels > 0 || this.limits.newChannelRated
  }

  /** Admits `channel` as active for the principal's account before it is attached, or throws 40114 / 90021. */
  async admit(p: Principal, channel: string): Promise<void> {
    if (!this.bounded) return
    const member = `${p.appId}:${channel}`
    // held here (named again by the refresh)
    if (this.mine.has(member) && this.occupancy.local(p.appId, channel).connections > 0) return
    const now = this.clock.now()
    if (this.limits.newChannelRated && !(await this.store.has(p.accountId, member, now, ACTIVE_CHANNEL_STALE_MS)))
      await this.limits.takeNewChannel(p.accountId)
    const r = await this.store.add(p.accountId, member, now, this.s.accountMaxChannels, ACTIVE_CHANNEL_STALE_MS)
    if (r === 'full')
      throw new GatewayError(
        40114,
        `Account channel limit exceeded (at most ${this.s.accountMaxChannels} active channels)`,
      )
    this.mine.set(member, { accountId: p.accountId, appId: p.appId, channel })
    this.stopRefresh ??= this.timers.every(REFRESH_MS, () => void this.refresh())
  }

  /**
   * Names again the channels this node holds attachments on, and forgets those it no longer holds
   * (they stop counting once stale). Runs every REFRESH_MS; tests call it.
   */
  async refresh(): Promise<void> {
    const byAccount = new Map<string, string[]>()
    for (const [member, m] of this.mine) {
      if (this.occupancy.local(m.appId, m.channel).connections === 0) {
        this.mine.delete(member)
        continue
      }
      const list = byAccount.get(m.accountId)
      if (list) list.push(member)
      else byAccount.set(m.accountId, [member])
    }
    const now = this.clock.now()
    await Promise.all(
      [...byAccount].map(([accountId, members]) => this.store.touch(accountId, members, now, ACTIVE_CHANNEL_STALE_MS)),
    )
  }

  close(): void {
    this.stopRefresh?.()
  }
}
