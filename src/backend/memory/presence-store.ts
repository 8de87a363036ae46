import type { Clock, HistoryRetention, OrphanMember, PresenceStore } from '../../core/ports'
import { PresenceAction, type HistoryQuery, type PresenceMessage } from '../../core/types'
import { randomId } from '../../lib/crypto'
import { expirePresenceHistory, presenceHistoryPage, PRESENCE_HISTORY_MAX } from '../shared/presence-history'

export interface MemoryPresenceSettings {
  historyTtlMs: number
  persistedHistoryTtlMs: number
  /** How often idle channels are looked for (the broker's sweep period: CHANNEL_IDLE_MS, at most 10 s). */
  channelIdleMs: number
}

interface ChannelPresence {
  members: Map<string, PresenceMessage>
  /** Oldest first; none older than the retention of the channel's last write. */
  history: PresenceMessage[]
  /** The channel's history is kept for the long retention (a `persisted` namespace's), as of its last write. */
  persisted: boolean
}

const memberKey = (e: { connectionId: string; clientId: string }) => e.connectionId + '\u0000' + e.clientId

/**
 * Presence sets and presence history per channel, in memory, and the members of each connection
 * (a single node holds every connection: nothing to reap). Presence history is kept as message
 * history is (the ring's HISTORY_TTL_MS, or a persisted namespace's PERSISTED_HISTORY_TTL_MS, and
 * at most PRESENCE_HISTORY_MAX events): older events are dropped when the channel is written and
 * by a sweep, and a channel with no member and no event left is forgotten. Unlike a persisted
 * channel's messages, its presence history is not written to SQLite (a restart forgets it).
 */
export class MemoryPresenceStore implements PresenceStore {
  private channels = new Map<string, ChannelPresence>()
  /** Connection id -> keys (`<channel key>\\u0001<member key>`) of the members entered over it. */
  private connections = new Map<string, Set<string>>()
  private readonly sweeper: ReturnType<typeof setInterval>

  constructor(
    private readonly clock: Clock,
    private readonly s: MemoryPresenceSettings,
  ) {
    this.sweeper = setInterval(() => this.sweep(), Math.min(10_000, s.channelIdleMs))
    this.sweeper.unref?.()
  }

  private static key(appId: string, channel: string) {
    return appId + '\u0000' + channel
  }

  private get(appId: string, channel: string, create: true): ChannelPresence
  private get(appId: string, channel: string, create: false): ChannelPresence | undefined
  private get(appId: string, channel: string, create: boolean) {
    const k = MemoryPresenceStore.key(appId, channel)
    let c = this.channels.get(k)
    if (!c && create) this.channels.set(k, (c = { members: new Map(), history: [], persisted: false }))
    return c
  }

  /** The oldest timestamp a channel's history keeps now. */
  private since(persisted: boolean) {
    return this.clock.now() - (persisted ? this.s.persistedHistoryTtlMs : this.s.historyTtlMs)
  }

  async members(appId: string, channel: string): Promise<PresenceMessage[]> {
    const c = this.get(appId, channel, false)
    return c ? [...c.members.values()] : []
  }

  async count(appId: string, channel: string): Promise<number> {
    return this.get(appId, channel, false)?.members.size ?? 0
  }

  async apply(appId: string, channel: string, events: PresenceMessage[], retention: HistoryRetention): Promise<void> {
    const c = this.get(appId, channel, true)
    c.persisted = retention.persisted
    const ck = MemoryPresenceStore.key(appId, channel)
    for (const e of events) {
      const mk = memberKey(e)
      let mine = this.connections.get(e.connectionId)
      if (e.action === PresenceAction.LEAVE) {
        c.members.delete(mk)
        mine?.delete(ck + '\u0001' + mk)
        if (mine?.size === 0) this.connections.delete(e.connectionId)
      } else {
        c.members.set(mk, { ...e, action: PresenceAction.PRESENT })
        if (!mine) this.connections.set(e.connectionId, (mine = new Set()))
        mine.add(ck + '\u0001' + mk)
      }
      c.history.push(e)
    }
    if (c.history.length > PRESENCE_HISTORY_MAX) c.history.splice(0, c.history.length - PRESENCE_HISTORY_MAX)
    expirePresenceHistory(c.history, this.since(c.persisted))
    if (c.members.size === 0 && c.history.length === 0) this.channels.delete(ck)
  }

  async history(
    appId: string,
    channel: string,
    q: HistoryQuery,
    retention: HistoryRetention,
  ): Promise<PresenceMessage[]> {
    return presenceHistoryPage(this.get(appId, channel, false)?.history ?? [], q, this.since(retention.persisted))
  }

  /** Drops presence history past its retention, and the channels left with no member and no history. */
  sweep(): void {
    const since = [this.since(false), this.since(true)]
    for (const [k, c] of this.channels) {
      expirePresenceHistory(c.history, since[Number(c.persisted)]!)
      if (c.members.size === 0 && c.history.length === 0) this.channels.delete(k)
    }
  }

  /** Channels with presence held, and the presence events of their histories. */
  memory(): { channels: number; events: number } {
    let events = 0
    for (const c of this.channels.values()) events += c.history.length
    return { channels: this.channels.size, events }
  }

  close(): void {
    clearInterval(this.sweeper)
  }

  async ofConnection(connectionId: string): Promise<OrphanMember[]> {
    return this.membersOf(connectionId, false)
  }

  async claim(): Promise<void> {}

  async take(connectionId: string): Promise<OrphanMember[]> {
    const out = this.membersOf(connectionId, true)
    this.connections.delete(connectionId)
    return out
  }

  private membersOf(connectionId: string, remove: boolean): OrphanMember[] {
    const out: OrphanMember[] = []
    for (const k of this.connections.get(connectionId) ?? []) {
      const [ck, mk] = k.split('\u0001') as [string, string]
      const c = this.channels.get(ck)
      const member = c?.members.get(mk)
      if (!c || !member) continue
      if (remove) c.members.delete(mk)
      const [appId, channel] = ck.split('\u0000') as [string, string]
      out.push({ appId, channel, member })
    }
    return out
  }

  async reap(): Promise<OrphanMember[]> {
    return []
  }

  readonly node = randomId(12)

  /** One node: whatever issued a key is this node or an earlier run of it on the same data (the ended records decide). */
  async onLiveNode(): Promise<boolean> {
    return true
  }
}
