import type { SessionSink, StreamSession } from '../../core/fanout/session'
import type { Message } from '../../core/types'
import type { GatewayError } from '../../errors'
import type { Core } from '../../core'
import type { OccupancyRole } from '../../core/fanout/occupancy'
import { batchFrames, deliveryFrame, type Format, type Frame } from './frames'
import { delivered } from './metrics'
import { Action, Flag } from './protocol'
import { occupancyFrame } from './occupancy-frames'
import type { OccupancyEvent } from '../../core/presence/occupancy-events'

/** The mode an attachment needs to receive each kind of delivery frame. */
const MODE_OF = {
  message: Flag.SUBSCRIBE,
  summary: Flag.SUBSCRIBE,
  presence: Flag.PRESENCE_SUBSCRIBE,
  annotation: Flag.ANNOTATION_SUBSCRIBE,
} as const

/** What an attachment needs of its connection. */
export interface AttachmentHost {
  readonly id: string
  readonly core: Core
  readonly format: Format
  /** Deliver the connection's own messages back to it (`echo` connect parameter). */
  readonly echo: boolean
  /** Sends a protocol message (ATTACHED). */
  send(pm: object): void
  /** Sends a delivery frame; false when the socket now holds more unsent bytes than the connection allows. */
  deliver(frame: Frame): boolean
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
  /** Ends the occupancy events of an `occupancy=metrics` attachment. */
  unwatch?: () => void
  /** The channel counted in occupancy when `channel` is a filtered channel's name (its base channel). */
  base?: string
  private closed = false

  constructor(
    private readonly host: AttachmentHost,
    readonly channel: string,
    readonly modes: number,
    /** Flags of ATTACHED besides the modes (RESUMED, HAS_PRESENCE; HAS_BACKLOG is found when the session begins). */
    private readonly flags: number,
    /** Channel params the server recognised, echoed in ATTACHED. */
    private readonly params: Record<string, string> | undefined,
    /** A non-fatal error ATTACHED carries (e.g. the resume point was no longer retained). */
    private readonly error?: GatewayError,
  ) {}

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

  deliver(_index: number, batch: Message[]): boolean {
    if (this.closed) return true
    let more = true
    for (const f of batchFrames(batch, this.channel, this.host.format)) {
      if (!(this.modes & MODE_OF[f.kind])) continue
      if (f.kind === 'message' && !this.host.echo && f.entries.some((m) => m.connectionId === this.host.id)) {
        const others = f.entries.filter((m) => m.connectionId !== this.host.id)
        if (others.length) more = this.host.deliver(deliveryFrame(others, this.channel, this.host.format).frame)
        delivered.value += others.length
        continue
      }
      more = this.host.deliver(f.frame)
      delivered.value += f.entries.length
    }
    return more
  }

  /** An occupancy event (`occupancy=metrics`), once ATTACHED went out. */
  occupancy(e: OccupancyEvent): void {
    if (!this.closed && this.attached) this.host.deliver(occupancyFrame(this.channel, e, this.host.format))
  }

  /** A resume gap found after ATTACHED: an update without RESUMED carrying the error (the client sees the discontinuity). */
  notice(err: GatewayError): void {
    if (!this.closed) this.sendAttached(this.session?.positions[0] ?? '', err, this.flags & ~Flag.RESUMED)
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
