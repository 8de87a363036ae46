import type { PresenceStore } from '../../core/ports'
import type { HistoryQuery, PresenceMessage } from '../../core/types'

const HISTORY_MAX = 1000
const PRESENT = 1
const LEAVE = 3

interface ChannelPresence { members: Map<string, PresenceMessage>; history: PresenceMessage[] }

/** Presence sets and bounded presence history per channel, in memory. */
export class MemoryPresenceStore implements PresenceStore {
  private channels = new Map<string, ChannelPresence>()

  private get(appId: string, channel: string, create: true): ChannelPresence
  private get(appId: string, channel: string, create: false): ChannelPresence | undefined
  private get(appId: string, channel: string, create: boolean) {
    const k = appId + '\u0000' + channel
    let c = this.channels.get(k)
    if (!c && create) this.channels.set(k, (c = { members: new Map(), history: [] }))
    return c
  }

  async members(appId: string, channel: string): Promise<PresenceMessage[]> {
    const c = this.get(appId, channel, false)
    return c ? [...c.members.values()] : []
  }

  async apply(appId: string, channel: string, events: PresenceMessage[]): Promise<void> {
    const c = this.get(appId, channel, true)
    for (const e of events) {
      const memberKey = e.connectionId + '\u0000' + e.clientId
      if (e.action === LEAVE) c.members.delete(memberKey)
      else c.members.set(memberKey, { ...e, action: PRESENT })
      c.history.push(e)
      if (c.history.length > HISTORY_MAX) c.history.splice(0, c.history.length - HISTORY_MAX)
    }
  }

  async history(appId: string, channel: string, q: HistoryQuery): Promise<PresenceMessage[]> {
    const c = this.get(appId, channel, false)
    if (!c) return []
    const inRange = c.history.filter((e) => (q.start === undefined || e.timestamp >= q.start) && (q.end === undefined || e.timestamp <= q.end))
    const ordered = q.direction === 'forwards' ? inRange : inRange.reverse()
    const from = q.cursor === undefined ? 0 : ordered.findIndex((e) => e.id === q.cursor) + 1
    return ordered.slice(from, from + q.limit)
  }
}
