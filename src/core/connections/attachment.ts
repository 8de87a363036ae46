import type { SessionSink, StreamSession } from '../fanout/session'
import type { Message } from '../types'
import { GatewayError } from '../../errors'
import type { ConnectionServices } from './services'
import type { OccupancyRole } from '../fanout/occupancy'
import type { DeliveryFilter } from './transport'
import { Action, Flag } from './protocol'
import type { AttachRequest } from './attach-request'
import type { AttachStart } from './attach-start'
import type { OutboundBudget } from './outbound-budget'
import { LiveOnlyKeeper, type KeptBudget } from './live-only-keeper'
import type { LiveOnlyKind } from '../channels/ports'

/** How an attachment with these modes counts in its channel's occupancy. */
function occupancyRole(modes: number): OccupancyRole {
  return {
    publish: (modes & Flag.PUBLISH) !== 0,
    subscribe: (modes & Flag.SUBSCRIBE) !== 0,
    presenceSubscribe: (modes & Flag.PRESENCE_SUBSCRIBE) !== 0,
    // granted only with the object-publish / object-subscribe capability (grantedModes)
    objectPublish: (modes & Flag.OBJECT_PUBLISH) !== 0,
    objectSubscribe: (modes & Flag.OBJECT_SUBSCRIBE) !== 0,
  }
}

/** What an attachment needs of its connection. */
export interface AttachmentHost {
  readonly id: string
  readonly core: ConnectionServices
  /** Deliver the connection's own messages back to it (`echo` connect parameter). */
  readonly echo: boolean
  /** Sends a protocol message (ATTACHED). */
  send(pm: object): void
  /** Delivers a batch of the channel; false when the client now holds more unread bytes than the connection allows. */
  deliver(channel: string, batch: Message[], filter: DeliveryFilter): boolean
  /** A subscription of this attachment ended with an error (slow, revoked, backend failure). */
  ended(attachment: Attachment, err: GatewayError): void
  /** The connection's outbound message budget (REALTIME_MAX_OUTBOUND_RATE), when it has one. */
  readonly outbound?: OutboundBudget
}

/** What the attach's steps add to the attachment (attach-step.ts `AttachPlans`). */
export interface StepAdditions {
  /** Flags of ATTACHED (HAS_PRESENCE, HAS_OBJECTS). */
  readonly flags: number
  /** Params ATTACHED echoes besides the recognised ones. */
  readonly params?: Record<string, string>
  /** Run after each ATTACHED sent again. */
  readonly reattached?: (att: Attachment) => void
}

/**
 * A stage of one attachment between its session and the transport (attachment-stages.ts): the
 * frames a batch goes out as (deltas: a delta starts a frame of its own, fanout/delta-stage.ts).
 */
export interface FrameStage {
  framed(batch: Message[]): Iterable<Message[]>
}

/**
 * One attached channel of a realtime connection: the granted modes, and (when they include a
 * receiving mode) a stream session whose deliveries become MESSAGE, PRESENCE, OBJECT and
 * ANNOTATION frames. ATTACHED goes out when the session has fixed its start, before any replayed
 * frame. It counts in its channel's occupancy from when it is made until it closes.
 */
export class Attachment implements SessionSink {
  session?: StreamSession
  /** The channel: the one attached, or a filtered channel's base (its occupancy and capability). */
  readonly base: string
  /** The modes the ATTACH asked for (0: the default set), which a re-auth grants again (`regrant`). */
  readonly requested: number
  /** Granted; the sending modes among them follow the capability on re-auth (`regrant`). */
  modes: number
  /** Counted in the channel's occupancy as this, until it closes. */
  private role: OccupancyRole
  /** Flags of ATTACHED besides the modes (RESUMED, HAS_PRESENCE, HAS_OBJECTS; HAS_BACKLOG is found when the session begins). */
  private readonly flags: number
  /** Channel params the server recognised, echoed in ATTACHED. */
  readonly params: Record<string, string> | undefined
  /** A non-fatal error ATTACHED carries (the resume point was no longer retained). */
  private readonly error?: GatewayError
  /** The steps' work after each ATTACHED sent again (attach-step.ts: LiveObjects sync again). */
  private readonly reattached?: (att: Attachment) => void
  /** Run when it closes (the end of its occupancy events). */
  private stops?: Array<() => void>
  private closed = false
  /** Messages are being dropped for the connection's outbound rate (the client was told). */
  private dropping = false
  /** Which entries this attachment delivers (by its modes and the connection's `echo`). */
  private readonly filter: DeliveryFilter
  /** Its channel may carry annotations and summaries (annotations.mayCarry, when it was made). */
  private readonly liveOnly: boolean
  /** The serial of the newest annotation or summary handed to the transport ('' none): a drop's keeper notes it. */
  private sentLiveOnly = ''

  /** The name attached (a filtered channel's whole): what the frames carry. */
  readonly channel: string

  constructor(
    private readonly host: AttachmentHost,
    req: AttachRequest,
    /** The app whose channel it is. */
    private readonly appId: string,
    start: AttachStart,
    plans: StepAdditions,
    /** Its own stage, when its ATTACH asked for one (attachment-stages.ts). */
    private readonly frames?: FrameStage,
  ) {
    const modes = req.modes
    this.channel = req.wireName
    this.base = req.channel
    this.requested = req.requested
    this.modes = modes
    this.flags = (start.kind === 'resume' ? Flag.RESUMED : 0) | plans.flags
    const params = plans.params ? { ...req.echoed, ...plans.params } : req.echoed
    this.params = Object.keys(params).length ? params : undefined
    if (start.kind === 'fresh') this.error = start.error
    this.reattached = plans.reattached
    this.filter = {
      messages: (modes & Flag.SUBSCRIBE) !== 0,
      presence: (modes & Flag.PRESENCE_SUBSCRIBE) !== 0,
      objects: (modes & Flag.OBJECT_SUBSCRIBE) !== 0,
      annotations: (modes & Flag.ANNOTATION_SUBSCRIBE) !== 0,
      exceptConnection: host.echo ? undefined : host.id,
    }
    this.liveOnly =
      (this.filter.annotations || this.filter.messages) && host.core.annotations.mayCarry(appId, this.base)
    this.role = occupancyRole(modes)
    host.core.occupancy.attach(appId, this.base, this.role)
  }

  /**
   * ATTACHED with the attach point: the resume point when resumed, else the channel's head. Rewound
   * messages follow when a fresh attach starts below the head: only then is HAS_BACKLOG set.
   */
  begin(positions: string[], heads: string[]): void {
    if (this.flags & Flag.RESUMED) return this.sendAttached(positions[0]!)
    const backlog = positions[0] !== heads[0] ? Flag.HAS_BACKLOG : 0
    this.sendAttached(heads[0]!, this.error, this.flags | backlog)
  }

  sendAttached(channelSerial: string, error = this.error, flags = this.flags): void {
    const pm: Record<string, unknown> = {
      action: Action.ATTACHED,
      channel: this.channel,
      channelSerial,
      flags: this.modes | flags,
    }
    if (this.params) pm.params = this.params
    if (error) pm.error = error.toBody()
    this.host.send(pm)
  }

  /**
   * New modes granted on re-auth (only sending modes added or removed: the deliveries stay as they
   * are); the channel's occupancy counts it in its new role.
   */
  regrant(modes: number): void {
    if (modes === this.modes) return
    this.modes = modes
    if (this.closed) return
    const role = occupancyRole(modes)
    this.host.core.occupancy.detach(this.appId, this.base, this.role)
    this.host.core.occupancy.attach(this.appId, this.base, role)
    this.role = role
  }

  deliver(_index: number, batch: Message[]): boolean {
    if (this.closed) return true
    const budget = this.host.outbound
    if (budget) {
      const k = budget.take(batch.length)
      if (k < batch.length) {
        this.dropped(budget.rate)
        if (k === 0) return true
        batch = batch.slice(0, k)
      } else this.dropping = false
    }
    if (this.liveOnly) this.noteLiveOnly(batch)
    if (!this.frames) return this.host.deliver(this.channel, batch, this.filter)
    // every frame of its stage goes, room or not (a delta starts a frame of its own)
    let room = true
    for (const frame of this.frames.framed(batch)) room = this.host.deliver(this.channel, frame, this.filter) && room
    return room
  }

  /** Notes the newest annotation or summary of `batch` this attachment hands out. */
  private noteLiveOnly(batch: Message[]) {
    const f = this.filter
    for (let i = batch.length - 1; i >= 0; i--) {
      const m = batch[i]!
      if (
        (m.kind === 'summary' && f.messages) ||
        (m.kind === 'annotation' && f.annotations && (!f.exceptConnection || m.connectionId !== f.exceptConnection))
      ) {
        this.sentLiveOnly = m.serial
        return
      }
    }
  }

  /**
   * Messages past the connection's outbound rate were dropped: the client is told once per run of
   * drops, as a continuity loss (80020; the hosted service records 42915), and reads them from history.
   */
  private dropped(rate: number) {
    if (this.dropping) return
    this.dropping = true
    this.notice(
      new GatewayError(
        80020,
        `Continuity lost on channel "${this.channel}": messages beyond this connection's outbound rate (${rate} a second) were not delivered; read them from history`,
      ),
    )
  }

  /**
   * A keeper of the live-only entries this attachment delivers, left for the connection's resume
   * (live-only-keeper.ts) and sharing `budget` with its other channels' keepers; none when it
   * delivers none, or when its channel may carry none (annotations.mayCarry).
   */
  keeper(budget: KeptBudget): LiveOnlyKeeper | undefined {
    const f = this.filter
    const { hub, annotations } = this.host.core
    const channel = this.session?.channels[0]
    if (!hub || channel === undefined || this.closed || (!f.annotations && !f.messages)) return undefined
    if (!annotations.mayCarry(this.appId, channel)) return undefined
    return new LiveOnlyKeeper(
      hub,
      this.appId,
      channel,
      this.host.id,
      { annotations: !!f.annotations, summaries: f.messages, exceptConnection: f.exceptConnection },
      budget,
      this.sentLiveOnly,
    )
  }

  /**
   * Whether a resume from `from` that found nothing kept of the connection here (it dropped on
   * another node, or this one restarted) missed live-only entries this attachment delivers
   * (annotations.missedSince); started before its session does, so what the session receives live
   * is not counted. False when it delivers none or its channel may carry none, and when the store
   * cannot tell.
   */
  missedLiveOnly(from: string): Promise<boolean> {
    const f = this.filter
    const channel = this.session?.channels[0]
    if (channel === undefined || !this.liveOnly) return Promise.resolve(false)
    const kinds: LiveOnlyKind[] = []
    if (f.annotations) kinds.push('annotation')
    if (f.messages) kinds.push('summary')
    return this.host.core.annotations.missedSince(this.appId, channel, from, kinds).catch(() => false)
  }

  /**
   * Hands on what the dropped connection's keeper kept of this channel (after ATTACHED, before
   * the replay's first frame), but for what this attachment's session received itself; a keeper
   * that let entries go, or one whose attachment sent one after `from` (the client's position)
   * before the drop, tells the client (80020).
   */
  handOn(k: LiveOnlyKeeper, from: string): void {
    const kept = k.kept(this.session?.firstLive?.[0])
    if (kept.length) this.deliver(0, kept)
    if (k.missed) this.liveOnlyLost(`${k.missed} annotation events or summaries were not kept`)
    // sent before the drop, after what the client received: lost with the socket
    else if (k.sent > from) this.liveOnlyLost('annotation events or summaries sent as it dropped did not reach it')
  }

  /** Tells the client that live-only entries it would have received were lost while it was away (80020). */
  liveOnlyLost(what: string): void {
    this.notice(
      new GatewayError(
        80020,
        `Continuity lost on channel "${this.channel}": ${what} while this connection was away; read them with the annotations of their messages`,
      ),
    )
  }

  /** A resume gap found after ATTACHED: an update without RESUMED carrying the error (the client sees the discontinuity). */
  notice(err: GatewayError): void {
    if (this.closed) return
    this.sendAttached(this.session?.positions[0] ?? '', err, this.flags & ~Flag.RESUMED)
    this.reattached?.(this)
  }

  /** Runs `stop` when the attachment closes (at once when it has). */
  onClose(stop: () => void): void {
    if (this.closed) stop()
    else (this.stops ??= []).push(stop)
  }

  end(err: GatewayError): void {
    if (this.closed) return
    this.close()
    this.host.ended(this, err)
  }

  /** The connection is going away (shutdown): the connection itself tells the client. */
  close(): void {
    if (this.closed) return
    this.closed = true
    this.session?.close()
    for (const stop of this.stops?.splice(0) ?? []) stop()
    this.host.core.occupancy.detach(this.appId, this.base, this.role)
  }
}
