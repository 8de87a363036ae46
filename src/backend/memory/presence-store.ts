import type { OrphanMember, PresenceStore } from '../../core/ports'
import { PresenceAction, type HistoryQuery, type PresenceMessage } from '../../core/types'
import { randomId } from '../../lib/crypto'
import { presenceHistoryPage } from '../shared/presence-history'

const HISTORY_MAX = 1000

interface ChannelPresence {
  members: Map<string, PresenceMessage>
  history: PresenceMessage[]
}

const memberKey = (e: { connectionId: string; clientId: string }) => e.connectionId + '\u0000' + e.clientId

/**
 * Presence sets and bounded presence history per channel, in memory, and the members of each
 * connection (a single node holds every connection: nothing to reap).
 */
export class MemoryPresenceStore implements PresenceStore {
  private channels = new Map<string, ChannelPresence>()
  /** Connection id -> keys (`<channel key>\\u0001<member key>`) of the members entered over it. */
  private connections = new Map<string, Set<string>>()

  private static key(appId: string, channel: string) {
    return appId + '\u0000' + channel
  }

  private get(appId: string, channel: string, create: true): ChannelPresence
  private get(appId: string, channel: string, create: false): ChannelPresence | undefined
  private get(appId: string, channel: string, create: boolean) {
    const k = MemoryPresenceStore.key(appId, channel)
    let c = this.channels.get(k)
    if (!c && create) this.channels.set(k, (c = { members: new Map(), history: [] }))
    return c
  }

  async members(appId: string, channel: string): Promise<PresenceMessage[]> {
    const c = this.get(appId, channel, false)
    return c ? [...c.members.values()] : []
  }

  async count(appId: string, channel: string): Promise<number> {
    return this.get(appId, channel, false)?.members.size ?? 0
  }

  async apply(appId: string, channel: string, events: PresenceMessage[]): Promise<void> {
    const c = this.get(appId, channel, true)
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
      if (c.history.length > HISTORY_MAX) c.history.splice(0, c.history.length - HISTORY_MAX)
    }
  }

  async history(appId: string, channel: string, q: HistoryQuery): Promise<PresenceMessage[]> {
    return presenceHistoryPage(this.get(appId, channel, false)?.history ?? [], q)
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
