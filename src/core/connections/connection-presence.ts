import { GatewayError } from '../../errors'
import { randomId } from '../../lib/crypto'
import { authorize } from '../auth/authorize'
import type { Principal } from '../auth/principal'
import { stampUserClaim } from '../auth/user-claims'
import { draftFromWire, messageSize } from '../model/message'
import { checkChannelName } from '../model/names'
import type { OrphanMember, PresenceStore, Timers } from '../ports'
import { PresenceAction, type PresenceMessage } from '../types'
import type { Limits } from '../limits/limits'
import type { StatsService } from '../stats/stats-service'
import type { PresenceService } from '../presence/presence-service'

export interface ConnectionPresenceSettings {
  maxMessageSize: number
  presenceMaxMembers: number
  /** How often this node looks for members of dead nodes (ms; the store says which are dead). */
  presenceLeaseMs: number
}

/** What a connection knows of its own members on one channel: clientId -> the member as last entered or updated. */
export type OwnMembers = Map<string, PresenceMessage>

/** The outcome of a PRESENCE protocol message: the serials to acknowledge and the events appended. */
export interface PresenceOutcome {
  serials: Array<string | null>
  events: PresenceMessage[]
}

const isAction = (a: unknown): a is number =>
  a === PresenceAction.ENTER || a === PresenceAction.LEAVE || a === PresenceAction.UPDATE

/**
 * Presence entered over client connections (the realtime protocol): enter, update and leave with
 * the hosted service's rules, and the leaves nobody sends: at once when a connection closes or
 * detaches, after a grace period when it drops without a word (unless it resumes, on any node),
 * and for every member of a node that died (the store's leases). Every event goes through the
 * channel's log (`PresenceService.publish`), so all transports and nodes see the same sequence.
 */
export class ConnectionPresence {
  /** Each dropped connection's grace period, by the cancel of its timer. */
  private readonly grace = new Map<string, () => void>()
  private readonly stopReaper: () => void
  /** Ids of the leaves this node makes up: never prefixed by a member's connection id (so clients order them by time). */
  private readonly synthesizedPrefix = `leave-${randomId(8)}`
  private synthesized = 0

  constructor(
    private readonly presence: PresenceService,
    private readonly store: PresenceStore,
    private readonly limits: Limits,
    private readonly stats: StatsService,
    private readonly s: ConnectionPresenceSettings,
    private readonly onError: (e: unknown) => void = () => {},
    private readonly timers: Timers,
  ) {
    this.stopReaper = timers.every(Math.max(250, Math.floor(s.presenceLeaseMs / 2)), () => void this.reap())
  }

  /**
   * A PRESENCE protocol message of connection `connectionId` (its `msgSerial`): needs `presence`
   * on the channel; a member's clientId is the connection's own, or (for credentials that may act
   * as anyone) the one each event names; events get ids `<connectionId>:<msgSerial>:<index>`.
   * Entering when present is an update; leaving when not present, or re-entering with the present
   * member's own id, is acknowledged and changes nothing; a leave without data carries the
   * member's last data.
   */
  async fromConnection(
    p: Principal,
    channelName: string,
    wire: unknown,
    ctx: { connectionId: string; msgSerial: number; own: OwnMembers },
  ): Promise<PresenceOutcome> {
    const channel = checkChannelName(channelName)
    authorize(p, channel, 'presence')
    if (!Array.isArray(wire) || wire.length === 0)
      throw new GatewayError(40000, 'Invalid presence message: no presence events')
    let size = 0
    const events: PresenceMessage[] = []
    const kept: number[] = []
    let entering = 0
    wire.forEach((item, i) => {
      const action = (item as { action?: unknown } | null)?.action
      if (!isAction(action)) throw new GatewayError(40000, `Invalid presence action ${String(action)}`)
      const d = draftFromWire(item, p)
      stampUserClaim(d, p, channel)
      if (d.clientId === undefined) throw new GatewayError(91000, 'Unable to enter presence channel (no clientId)')
      size += messageSize(d)
      const before = ctx.own.get(d.clientId)
      const e: PresenceMessage = {
        id: `${ctx.connectionId}:${ctx.msgSerial}:${i}`,
        action: action === PresenceAction.ENTER && before ? PresenceAction.UPDATE : action,
        clientId: d.clientId,
        connectionId: ctx.connectionId,
        timestamp: 0,
      }
      if (action === PresenceAction.LEAVE && !before) return // not present: nothing leaves
      // a client re-entering a member it still has (after a resume) sends the member's own id:
      // not newer than what is present, so it changes nothing
      if (action !== PresenceAction.LEAVE && before && d.id === before.id) return
      const carried = action === PresenceAction.LEAVE && d.data === undefined ? before : d
      if (carried?.data !== undefined) e.data = carried.data
      if (carried?.encoding !== undefined) e.encoding = carried.encoding
      if (d.extras !== undefined) e.extras = d.extras
      if (!before && action !== PresenceAction.LEAVE) entering++
      events.push(e)
      kept.push(i)
    })
    if (size > this.s.maxMessageSize)
      throw new GatewayError(
        40009,
        `Maximum message length exceeded (size was ${size} bytes, limit is ${this.s.maxMessageSize} bytes)`,
      )
    const max = Math.min(this.s.presenceMaxMembers, p.presenceMaxMembers ?? Infinity)
    if (entering && (await this.store.count(p.appId, channel)) + entering > max)
      throw new GatewayError(91003, `Unable to enter presence channel (maximum member limit of ${max} exceeded)`)
    const serials: Array<string | null> = wire.map(() => null)
    if (events.length) {
      // presence events count against the account's message budget, as messages do
      await this.limits.take(p.accountId, 'messages', events.length)
      const appended = await this.presence.publish(p.appId, channel, events)
      this.stats.presencePublished(p.appId, p.accountId, events.length)
      kept.forEach((i, k) => (serials[i] = appended[k]!))
      for (const e of events) {
        if (e.action === PresenceAction.LEAVE) ctx.own.delete(e.clientId)
        else ctx.own.set(e.clientId, e)
      }
    }
    return { serials, events }
  }

  /** The members a connection has now, wherever they were entered (a resumed connection learns its own). */
  async ofConnectionMembers(connectionId: string): Promise<OrphanMember[]> {
    return this.store.ofConnection(connectionId)
  }

  /** A connection opened on this node, or resumed here: its members stay while it is here. */
  async claim(connectionId: string): Promise<void> {
    const t = this.grace.get(connectionId)
    if (t) {
      t()
      this.grace.delete(connectionId)
    }
    await this.store.claim(connectionId)
  }

  /** The connection closed or detached: its members on these channels leave now. */
  async leaveNow(appId: string, members: Array<{ channel: string; member: PresenceMessage }>): Promise<void> {
    await this.leave(members.map(({ channel, member }) => ({ appId, channel, member })))
  }

  /** The connection is gone for good (closed): forget it in the store (members it still had leave). */
  async closed(connectionId: string): Promise<void> {
    await this.leave(await this.store.take(connectionId))
  }

  /** The connection dropped: its members leave after `graceMs` unless it resumes first (here or on another node). */
  dropped(connectionId: string, graceMs: number): void {
    this.grace.get(connectionId)?.()
    const cancel = this.timers.after(graceMs, () => {
      this.grace.delete(connectionId)
      this.closed(connectionId).catch(this.onError)
    })
    this.grace.set(connectionId, cancel)
  }

  /** Members of nodes that died leave (each reaped by one node). */
  async reap(): Promise<void> {
    try {
      await this.leave(await this.store.reap())
    } catch (e) {
      this.onError(e)
    }
  }

  /** Synthesized LEAVE events (ids not prefixed by the member's connection, timestamp now), channel by channel. */
  private async leave(orphans: OrphanMember[]) {
    const byChannel = new Map<string, { appId: string; channel: string; events: PresenceMessage[] }>()
    for (const { appId, channel, member } of orphans) {
      const k = appId + '\u0000' + channel
      let g = byChannel.get(k)
      if (!g) byChannel.set(k, (g = { appId, channel, events: [] }))
      const e: PresenceMessage = {
        id: `${this.synthesizedPrefix}:${this.synthesized++}:0`,
        action: PresenceAction.LEAVE,
        clientId: member.clientId,
        connectionId: member.connectionId,
        timestamp: 0,
      }
      if (member.data !== undefined) e.data = member.data
      if (member.encoding !== undefined) e.encoding = member.encoding
      g.events.push(e)
    }
    await Promise.all([...byChannel.values()].map((g) => this.presence.publish(g.appId, g.channel, g.events)))
  }

  close(): void {
    this.stopReaper()
    for (const cancel of this.grace.values()) cancel()
    this.grace.clear()
  }
}
