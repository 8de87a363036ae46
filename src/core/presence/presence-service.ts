import { authorize } from '../auth/authorize'
import type { Principal } from '../auth/principal'
import type { Namespaces } from '../control/namespaces'
import type { Limits } from '../limits/limits'
import { checkChannelName } from '../model/names'
import { parseSerial } from '../model/serial'
import type { Broker, PresenceStore } from '../ports'
import type { RulesEngine } from '../rules/rules-engine'
import type { HistoryQuery, MessageDraft, PresenceMessage } from '../types'

export interface MemberFilter {
  clientId?: string
  connectionId?: string
  limit: number
  /** Only members after this position (a page's cursor: `memberPosition` of the last member before it). */
  after?: string
}

/** A member's place in the order REST pages members in: by connection, then client id (unique per channel). */
export const memberPosition = (m: Pick<PresenceMessage, 'connectionId' | 'clientId'>): string =>
  `${m.connectionId}\u0000${m.clientId ?? ''}`

/**
 * Presence of channels: who is present (reads), and how presence events enter a channel. An
 * event goes into the channel's log through the broker like a message (an entry of kind
 * `presence`), so every transport, resume and node sees it in channel order; the member set and
 * presence history are then updated from it.
 */
export class PresenceService {
  constructor(
    private readonly broker: Broker,
    private readonly store: PresenceStore,
    private readonly namespaces: Namespaces,
    private readonly limits: Limits,
    /** Routes the events to `channel.presence` rules (app queues). */
    private readonly rules?: Pick<RulesEngine, 'presenceChanged'>,
  ) {}

  /**
   * Members present on a channel (`subscribe` capability), optionally of one client or connection:
   * at most `limit` of them in `memberPosition` order, from after `filter.after`, so that pages
   * of members reach every one (a member entering or leaving between pages moves no other).
   */
  async members(p: Principal, channelName: string, filter: MemberFilter): Promise<PresenceMessage[]> {
    const channel = checkChannelName(channelName)
    authorize(p, channel, 'subscribe')
    const all = await this.store.members(p.appId, channel)
    const { after } = filter
    return all
      .filter(
        (m) =>
          (filter.clientId === undefined || m.clientId === filter.clientId) &&
          (filter.connectionId === undefined || m.connectionId === filter.connectionId) &&
          (after === undefined || memberPosition(m) > after),
      )
      .sort((a, b) => {
        const [x, y] = [memberPosition(a), memberPosition(b)]
        return x < y ? -1 : x > y ? 1 : 0
      })
      .slice(0, filter.limit)
  }

  /** Every member present, without a capability check (a realtime attacher's SYNC, checked at attach). */
  snapshot(appId: string, channel: string): Promise<PresenceMessage[]> {
    return this.store.members(appId, channel)
  }

  /** Members present and the connections they were entered over (occupancy), without a capability check. */
  async occupancy(appId: string, channel: string): Promise<{ presenceMembers: number; presenceConnections: number }> {
    const members = await this.store.members(appId, channel)
    return { presenceMembers: members.length, presenceConnections: new Set(members.map((m) => m.connectionId)).size }
  }

  async history(p: Principal, channelName: string, q: HistoryQuery): Promise<PresenceMessage[]> {
    const channel = checkChannelName(channelName)
    authorize(p, channel, 'history')
    await this.limits.take(p.accountId, 'history')
    return this.store.history(p.appId, channel, q, { persisted: await this.persisted(p.appId, channel) })
  }

  private async persisted(appId: string, channel: string): Promise<boolean> {
    return this.namespaces.persistedCached(appId, channel) ?? (await this.namespaces.isPersisted(appId, channel))
  }

  /**
   * Appends presence events to the channel's log (in order, one atomic step) and applies them to
   * the member set and presence history. Each event's timestamp becomes the time its entry got.
   * Returns the entries' serials.
   */
  async publish(appId: string, channel: string, events: PresenceMessage[]): Promise<string[]> {
    const persisted = await this.persisted(appId, channel)
    const drafts = events.map(presenceEntry)
    const { serials } = await this.broker.publish(appId, channel, drafts, { persisted })
    events.forEach((e, i) => {
      e.timestamp = parseSerial(serials[i]!)?.ms ?? e.timestamp
    })
    await this.store.apply(appId, channel, events, { persisted })
    this.rules?.presenceChanged(appId, channel, events)
    return serials
  }
}

/** A presence event as an entry of the channel's log. */
function presenceEntry(e: PresenceMessage): MessageDraft {
  const d: MessageDraft = {
    kind: 'presence',
    id: e.id,
    action: e.action,
    clientId: e.clientId,
    connectionId: e.connectionId,
  }
  if (e.data !== undefined) d.data = e.data
  if (e.encoding !== undefined) d.encoding = e.encoding
  if (e.extras !== undefined) d.extras = e.extras
  return d
}

/** A presence event from an entry of kind `presence` of a channel's log. */
export function presenceFromEntry(m: {
  id: string
  action?: number
  clientId?: string
  connectionId?: string
  timestamp: number
  data?: string | Uint8Array
  encoding?: string
  extras?: Record<string, unknown>
}): PresenceMessage {
  const e: PresenceMessage = {
    id: m.id,
    action: m.action ?? 1,
    clientId: m.clientId ?? '',
    connectionId: m.connectionId ?? '',
    timestamp: m.timestamp,
  }
  if (m.data !== undefined) e.data = m.data
  if (m.encoding !== undefined) e.encoding = m.encoding
  if (m.extras !== undefined) e.extras = m.extras
  return e
}
