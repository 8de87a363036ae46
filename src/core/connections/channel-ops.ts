import type { Principal } from '../auth/principal'
import { checkChannelName } from '../model/names'
import { isFiltered, parseFilteredChannel } from '../channels/filtered-channel'
import { asGatewayError, GatewayError } from '../../errors'
import { Attachment } from './attachment'
import { Action, Flag, grantedModes, loggedName, SENDING_MODES, wireError, type ProtocolMessage } from './protocol'
import type { PresenceOps } from './presence-ops'
import type { ConnectionHost } from './host'
import { readAttach } from './attach-request'
import { decideStart } from './attach-start'
import { planSteps } from './attach-step'
import { ATTACH_STEPS } from './attach-steps'
import { deliveriesOf } from './attachment-stages'
import { KEPT_PER_CONNECTION, type KeptBudget, type LiveOnlyKeeper } from './live-only-keeper'

/**
 * The attachments of one connection. Operations on one channel run one after another (an
 * ATTACH followed at once by a DETACH ends detached); different channels proceed independently.
 */
export class ChannelOps {
  private readonly attachments = new Map<string, Attachment>()
  /** Channels whose ATTACH is under way (not yet in `attachments`). */
  private attaching?: Set<string>
  /** Each channel's operations still running, chained (none on an idle connection). */
  private queues?: Map<string, Promise<void>>

  constructor(
    private readonly conn: ConnectionHost,
    private readonly presence: PresenceOps,
  ) {}

  get size(): number {
    return this.attachments.size
  }

  /**
   * Settles once the operations received so far on `channel` are done; undefined when none is
   * pending. A publish waits for it: an ATTACH sent before it has fixed its start by then, so the
   * connection receives what it publishes next (a connection's protocol messages act in order).
   */
  pending(channel: unknown): Promise<void> | undefined {
    return typeof channel === 'string' ? this.queues?.get(channel) : undefined
  }

  attach(pm: ProtocolMessage): void {
    this.onChannel(pm, (channel) => this.doAttach(channel, pm))
  }

  detach(pm: ProtocolMessage): void {
    this.onChannel(pm, async (channel) => {
      this.attachments.get(channel)?.close()
      this.attachments.delete(channel)
      await this.presence.detached(channel) // leaving a channel leaves its presence (with the members' leaves first)
      this.conn.send({ action: Action.DETACHED, channel })
      this.conn.log.debug('realtime detached', { connectionId: this.conn.id, channel })
    })
  }

  /**
   * The modes granted to the channel's attachment; undefined when the channel is not attached
   * (publishing without attaching is allowed, within the capability).
   */
  modesOf(channel: string): number | undefined {
    return this.attachments.get(channel)?.modes
  }

  /** SYNC asked for by the client: the members again, if it receives presence on the channel. */
  sync(pm: ProtocolMessage): void {
    this.onChannel(pm, async (channel) => {
      const att = this.attachments.get(channel)
      if (att && att.modes & Flag.PRESENCE_SUBSCRIBE) await this.presence.sync(channel)
    })
  }

  /**
   * Runs `op` after the channel's earlier operations; a failure becomes a channel ERROR (that
   * channel fails). A frame naming no channel fails the connection as a malformed frame does
   * (40000): a channel ERROR must carry a channel field, and one without reads as the
   * connection's (an empty name is a name: its ERROR carries `channel: ""`, which the clients take
   * as that channel's, RTL4d).
   */
  private onChannel(pm: ProtocolMessage, op: (channel: string) => Promise<void>) {
    if (typeof pm.channel !== 'string')
      return this.conn.fail(new GatewayError(40000, `Invalid protocol message: action ${pm.action} needs a channel`))
    const name = pm.channel
    let channel: string
    try {
      channel = isFiltered(name) ? (parseFilteredChannel(name), name) : checkChannelName(name)
    } catch (e) {
      return this.channelError(name, asGatewayError(e), pm.action)
    }
    this.inOrder(channel, () =>
      op(channel).catch((e) => {
        this.attachments.get(channel)?.close()
        this.attachments.delete(channel)
        this.channelError(channel, asGatewayError(e), pm.action)
      }),
    )
  }

  /**
   * Runs `op` after the channel's earlier operations (ATTACH, DETACH, SYNC, PRESENCE); later ones
   * wait for it. `op` settles its own failures: it never rejects.
   */
  inOrder(channel: string, op: () => Promise<void>): void {
    const run = (this.queues?.get(channel) ?? Promise.resolve()).then(op)
    ;(this.queues ??= new Map()).set(channel, run)
    void run.then(() => {
      if (this.queues?.get(channel) === run) this.queues.delete(channel)
    })
  }

  /** A channel ERROR (that channel fails; the connection goes on), logged at info with its reason. */
  private channelError(channel: string, err: GatewayError, action?: number) {
    this.conn.send({ action: Action.ERROR, channel, error: wireError(err) })
    this.conn.log.info(action === Action.ATTACH ? 'realtime attach refused' : 'realtime channel failed', {
      connectionId: this.conn.id,
      channel: loggedName(channel),
      code: err.code,
      statusCode: err.statusCode,
      error: err.message,
    })
  }

  private async doAttach(channel: string, pm: ProtocolMessage) {
    const { s } = this.conn
    const existing = this.attachments.get(channel)
    if (existing) {
      existing.close()
      this.attachments.delete(channel)
    } else if (this.attachments.size + (this.attaching?.size ?? 0) >= s.realtimeMaxChannels) {
      throw new GatewayError(90010, `Too many channels on this connection (at most ${s.realtimeMaxChannels})`)
    }
    // channels attach concurrently: this one holds its place while it awaits the backend
    const attaching = (this.attaching ??= new Set())
    attaching.add(channel)
    try {
      await this.attachNew(channel, pm)
    } finally {
      attaching.delete(channel)
    }
  }

  /**
   * A new attachment: the ATTACH read and granted, its start decided (fresh, rewind or resume),
   * the features' steps planned (attach-steps.ts), then ATTACHED once its deliveries have a fixed
   * start (through the stages it asked for: attachment-stages.ts), then the steps' work.
   */
  private async attachNew(wireName: string, pm: ProtocolMessage) {
    const { core, principalOf: principal } = this.conn
    const req = readAttach(wireName, pm, principal)
    const start = await decideStart(req, pm, principal.appId, core.streams)
    const plans = await planSteps(ATTACH_STEPS, req, start, this.conn)
    const { stream, frames } = deliveriesOf(req, start, this.conn)
    const att = new Attachment(this.conn, req, principal.appId, start, plans, frames)
    // counted once: among the attachments from here on, no longer among the ones under way
    this.attachments.set(wireName, att)
    this.attaching?.delete(wireName)
    // what the connection's dropped transport left of this channel's live-only entries (a resume)
    const keeper = this.conn.takeKeeper(wireName)
    const handOn = keeper && start.kind === 'resume' && stream
    if (stream) {
      att.session = core.streams.create(stream, att)
      if (handOn) att.session.watchFirstLive()
      // a resume that finds nothing kept of the connection here: asked before the session starts
      const missed = !keeper && start.kind === 'resume' ? att.missedLiveOnly(start.from) : undefined
      try {
        await core.streams.start(att.session)
      } finally {
        keeper?.release()
      }
      if (handOn) att.handOn(keeper, start.from)
      else if (missed && (await missed)) att.liveOnlyLost('annotation events or summaries were published')
    } else {
      keeper?.release()
      att.sendAttached(await core.streams.position(principal.appId, req.channel))
    }
    if (this.conn.log.enabled('debug'))
      this.conn.log.debug('realtime attached', {
        connectionId: this.conn.id,
        channel: loggedName(wireName),
        modes: req.modes,
        resumed: start.kind === 'resume',
        ...(att.params ? { params: att.params } : {}),
      })
    await plans.attached(att)
  }

  /**
   * New credentials: an attachment the capability no longer allows all it delivers fails (40160);
   * the others carry on under them, their sending modes (publish, presence...) widened or narrowed
   * to what the new capability grants of what the ATTACH asked for.
   */
  reauthorized(principal: Principal): void {
    for (const [channel, att] of this.attachments) {
      const granted = grantedModes(principal.capability, att.base, att.requested)
      const kept = (att.modes & ~SENDING_MODES) | (granted & SENDING_MODES)
      if ((granted & kept) !== kept || !kept) {
        att.close()
        this.attachments.delete(channel)
        this.channelError(
          channel,
          new GatewayError(40160, `The new credentials no longer permit the modes attached on "${channel}"`),
        )
      } else {
        att.regrant(kept)
        att.session?.renew(principal)
      }
    }
  }

  /** A subscription of `att` ended with an error of its channel alone (a filter refused for its cost): that channel fails. */
  failed(att: Attachment, err: GatewayError): void {
    if (this.attachments.get(att.channel) !== att) return
    this.attachments.delete(att.channel)
    this.channelError(att.channel, err)
  }

  drained(): void {
    for (const att of this.attachments.values()) void att.session?.drained()
  }

  /**
   * Keepers of the attachments' live-only entries, by channel name (a dropped transport's, for its
   * resume), sharing `budget`: the connection's one (KEPT_PER_CONNECTION), which the keepers an
   * earlier drop left and that are still waiting for their channel share too.
   */
  keepers(budget: KeptBudget = { left: KEPT_PER_CONNECTION }): Map<string, LiveOnlyKeeper> | undefined {
    let out: Map<string, LiveOnlyKeeper> | undefined
    for (const [name, att] of this.attachments) {
      const k = att.keeper(budget)
      if (k) (out ??= new Map()).set(name, k)
    }
    return out
  }

  closeAll(): void {
    for (const att of this.attachments.values()) att.close()
    this.attachments.clear()
  }
}
