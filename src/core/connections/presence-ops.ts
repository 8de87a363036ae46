import { checkChannelName } from '../model/names'
import type { OwnMembers, PresenceOutcome } from './connection-presence'
import { PresenceAction, type PresenceMessage } from '../types'
import { randomId } from '../../lib/crypto'
import type { AttachStep } from './attach-step'
import type { ConnectionHost } from './host'
import type { Operation } from './operations'
import { Action, Flag } from './protocol'

/** Members per SYNC frame: a new attacher's member list arrives in pages this long. */
export const SYNC_PAGE = 100

/**
 * PRESENCE from the client (enter, update, leave, and the *Client forms for credentials that may
 * act as anyone): in order with the channel's ATTACH and DETACH, ACKed with one serial per event;
 * a resend after a resume is answered with its first outcome, never applied twice (RTN19a).
 */
export const PRESENCE: Operation<PresenceOps> = {
  name: 'presence',
  mode: Flag.PRESENCE,
  remembered: true,
  ordered: true,
  dropsRefusals: true,
  rated: false,
  run: (presence, channel, pm, msgSerial) => presence.apply(channel, pm.presence, msgSerial),
}

/**
 * Presence of one realtime connection: PRESENCE frames applied (the PRESENCE operation above); the members this
 * connection entered, per channel, so it can leave them when it detaches or closes; and SYNC
 * frames, the member list a new attacher gets after ATTACHED.
 */
export class PresenceOps {
  /** Channel -> members entered over this connection. */
  private own?: Map<string, OwnMembers>

  constructor(private readonly host: ConnectionHost) {}

  /** Members entered over this connection, on all its channels (metrics). */
  get members(): number {
    let n = 0
    for (const m of this.own?.values() ?? []) n += m.size
    return n
  }

  /** A resumed connection learns the members it still has (entered on this or another node). */
  async restore(): Promise<void> {
    for (const { channel, member } of await this.host.core.connectionPresence.ofConnectionMembers(this.host.id)) {
      this.membersOf(channel).set(member.clientId, member)
    }
  }

  private membersOf(channel: string): OwnMembers {
    const own = (this.own ??= new Map())
    let m = own.get(channel)
    if (!m) own.set(channel, (m = new Map()))
    return m
  }

  /** A PRESENCE protocol message's events (`wire`), applied with the members this connection has on the channel. */
  apply(name: string, wire: unknown, msgSerial: number): Promise<PresenceOutcome> {
    const channel = checkChannelName(name) // before its members are looked for: a refused name leaves nothing behind
    const { core, principalOf, id } = this.host
    const ctx = { connectionId: id, msgSerial, own: this.membersOf(channel) }
    return core.connectionPresence.fromConnection(principalOf, channel, wire, ctx)
  }

  /** The connection detached the channel: its members there leave now. */
  async detached(channel: string): Promise<void> {
    const mine = this.own?.get(channel)
    this.own?.delete(channel)
    if (!mine?.size) return
    const members = [...mine.values()].map((member) => ({ channel, member }))
    await this.host.core.connectionPresence.leaveNow(this.host.principalOf.appId, members)
  }

  /** The connection closed: its members leave now, and the store forgets it. */
  async closed(): Promise<void> {
    const members: Array<{ channel: string; member: PresenceMessage }> = []
    for (const [channel, mine] of this.own ?? []) for (const member of mine.values()) members.push({ channel, member })
    this.own = undefined
    const cp = this.host.core.connectionPresence
    if (members.length) await cp.leaveNow(this.host.principalOf.appId, members)
    await cp.closed(this.host.id)
  }

  /** SYNC frames of the channel's members, asked for by the client. */
  async sync(channel: string): Promise<void> {
    sendMembers(this.host, channel, await this.host.core.presence.snapshot(this.host.principalOf.appId, channel))
  }
}

/**
 * The members after ATTACHED, for a fresh attacher that receives presence (a resumed one has
 * them): ATTACHED says HAS_PRESENCE when there are some, and SYNC frames follow it.
 */
export const PRESENCE_SYNC: AttachStep = {
  name: 'presence sync',
  prepare: async (req, start, conn) => {
    if (!(req.modes & Flag.PRESENCE_SUBSCRIBE) || start.kind === 'resume') return undefined
    const members = await conn.core.presence.snapshot(conn.principalOf.appId, req.channel)
    if (!members.length) return undefined
    return { flags: Flag.HAS_PRESENCE, attached: () => sendMembers(conn, req.wireName, members) }
  },
}

/** SYNC frames of `members` (one self-contained frame when they fit in one page). */
function sendMembers(host: ConnectionHost, channel: string, members: PresenceMessage[]): void {
  const syncId = randomId(10)
  for (let i = 0; i < members.length || i === 0; i += SYNC_PAGE) {
    const page = members.slice(i, i + SYNC_PAGE)
    const last = i + SYNC_PAGE >= members.length
    const pm = {
      action: Action.SYNC,
      channel,
      channelSerial: `${syncId}:${last ? '' : String(i / SYNC_PAGE + 1)}`,
      presence: page.map((m) => ({ ...m, action: PresenceAction.PRESENT })),
    }
    host.push(pm)
  }
}
