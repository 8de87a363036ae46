import type { SessionSink, StreamSession } from '../fanout/session'
import type { Message } from '../types'
import type { GatewayError } from '../../errors'
import type { ConnectionServices } from './services'
import type { OccupancyRole } from '../fanout/occupancy'
import type { DeliveryFilter } from './transport'
import { Action, Flag } from './protocol'
import { occupancyMessage } from './occupancy-message'
import type { OccupancyEvent } from '../presence/occupancy-events'
import type { DeltaStage } from '../fanout/delta-stage'

/** How an attachment with these modes counts in its channel's occupancy. */
export function occupancyRole(modes: number): OccupancyRole {
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
}

/**
 * One attached channel of a realtime connection: the granted modes, and (when they include
 * SUBSCRIBE or PRESENCE_SUBSCRIBE) a stream session whose deliveries become MESSAGE and PRESENCE
 * frames. ATTACHED goes out when the session has fixed its start, before any replayed frame.
 */
export class Attachment implements SessionSink {
  session?: StreamSession
  /** Set once ATTACHED went out. */
  attached = false
  /** Counted in the channel's occupancy as this, until it closes. */
  role?: OccupancyRole
  appId?: string
  /** Called after an ATTACHED sent again (a resume gap): LiveObjects sync again after every ATTACHED. */
  reattached?: () => void
  /** The channel counted in occupancy when `channel` is a filtered channel's name (its base channel). */
  base?: string
  /** The modes the ATTACH asked for (0: the default set), which a re-auth grants again (`regrant`). */
  requested = 0
  /** Ends the occupancy events of an `occupancy=metrics` attachment. */
  unwatch?: () => void
  /** Messages go as deltas (`delta=vcdiff`); a new attachment (a re-attach) starts with a whole message. */
  deltas?: DeltaStage
  private closed = false
  /** Which entries this attachment delivers (by its modes and the connection's `echo`). */
  private readonly filter: DeliveryFilter

  constructor(
    private readonly host: AttachmentHost,
    readonly channel: string,
    /** Granted; the sending modes among them follow the capability on re-auth (`regrant`). */
    public modes: number,
    /** Flags of ATTACHED besides the modes (RESUMED, HAS_PRESENCE; HAS_BACKLOG is found when the session begins). */
    private readonly flags: number,
    /** Channel params the server recognised, echoed in ATTACHED. */
    private readonly params: Record<string, string> | undefined,
    /** A non-fatal error ATTACHED carries (e.g. the resume point was no longer retained). */
    private readonly error?: GatewayError,
  ) {
    this.filter = {
      messages: (modes & Flag.SUBSCRIBE) !== 0,
      presence: (modes & Flag.PRESENCE_SUBSCRIBE) !== 0,
      objects: (modes & Flag.OBJECT_SUBSCRIBE) !== 0,
      annotations: (modes & Flag.ANNOTATION_SUBSCRIBE) !== 0,
      exceptConnection: host.echo ? undefined : host.id,
    }
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
    this.attached = true
    this.host.send(pm)
  }

  /**
   * New modes granted on re-auth (only sending modes added or removed: the deliveries stay as they
   * are); the channel's occupancy counts it in its new role.
   */
  regrant(modes: number): void {
    if (modes === this.modes) return
    this.modes = modes
    if (this.closed || !this.role) return
    const role = occupancyRole(modes)
    this.host.core.occupancy.detach(this.appId!, this.base ?? this.channel, this.role)
    this.host.core.occupancy.attach(this.appId!, this.base ?? this.channel, role)
    this.role = role
  }

  deliver(_index: number, batch: Message[]): boolean {
    if (this.closed) return true
    if (!this.deltas) return this.host.deliver(this.channel, batch, this.filter)
    // a delta starts a frame of its own (fanout/delta-stage.ts); every frame goes, room or not
    let room = true
    for (const frame of this.deltas.framed(batch)) room = this.host.deliver(this.channel, frame, this.filter) && room
    return room
  }

  /** An occupancy event (`occupancy=metrics`), once ATTACHED went out. */
  occupancy(e: OccupancyEvent): void {
    if (!this.closed && this.attached) this.host.send(occupancyMessage(this.channel, e))
  }

  /** A resume gap found after ATTACHED: an update without RESUMED carrying the error (the client sees the discontinuity). */
  notice(err: GatewayError): void {
    if (this.closed) return
    this.sendAttached(this.session?.positions[0] ?? '', err, this.flags & ~Flag.RESUMED)
    this.reattached?.()
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
    this.unwatch?.()
    if (this.role) this.host.core.occupancy.detach(this.appId!, this.base ?? this.channel, this.role)
  }
}
