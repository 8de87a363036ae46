import { GatewayError } from '../../errors'
import type { Principal } from '../auth/principal'
import type { Broker, Clock } from '../ports'
import type { Message } from '../types'
import { formatSerial, parseSerial } from '../channels/serial'
import type { Hub, Subscriber } from './hub'
import type { StatsService } from '../stats/stats-service'

/** Where a session's output goes (the event-stream writer). */
export interface SessionSink {
  /** New messages of channel #`index`, in order, each once. `batch` may be shared: never change it. */
  deliver(index: number, batch: Message[]): void
  /** Something the client must know that does not end the stream (e.g. a resume gap). */
  notice(err: GatewayError): void
  /** Starting position of every channel, before any delivery. */
  begin(positions: string[]): void
  /** The server ends the stream (e.g. the token expired). */
  end(err: GatewayError): void
  /** The server closes the stream without an error (shutdown): the client reconnects and resumes. */
  close(): void
}

export interface SessionStart {
  /** Resume: last delivered serial per channel (from the client's last event id). */
  resumeFrom?: string[]
  /** Deliver up to this many recent messages per channel first (fresh streams only). */
  rewind?: number
  /** Upper bound of messages replayed per channel. */
  replayLimit: number
}

/**
 * One subscription session over several channels: replays (rewind or resume) and then goes live,
 * delivering every message once and in order per channel. Live deliveries that race the replay
 * are buffered and de-duplicated by serial, so resume is exact.
 */
export class StreamSession implements Subscriber {
  readonly clientId?: string
  /** Last delivered serial per channel: what an event id encodes. */
  readonly positions: string[]
  /** Channel -> position in `channels`, only for streams of many channels (memory per connection counts). */
  private readonly index?: Map<string, number>
  private replaying = true
  private buffered?: Array<[number, Message[]]>
  private rewound?: Message[][]
  private closed = false
  /** Counted in the app's open connections (stats). */
  private counted = false
  private expiry?: ReturnType<typeof setTimeout>

  constructor(
    private readonly hub: Hub,
    private readonly broker: Broker,
    private readonly clock: Clock,
    private readonly principal: Principal,
    readonly connectionId: string,
    readonly channels: string[],
    private readonly sink: SessionSink,
    private readonly stats?: StatsService,
  ) {
    this.clientId = principal.clientId === '*' ? undefined : principal.clientId
    this.positions = channels.map(() => '')
    if (channels.length > 8) this.index = new Map(channels.map((c, i) => [c, i]))
  }

  /**
   * Subscribes every channel and fixes its starting position. Once this resolves, every message
   * published afterwards will be delivered: answer the client only then.
   */
  async prepare(opts: SessionStart): Promise<void> {
    const { appId, expires } = this.principal
    if (expires !== undefined) {
      this.expiry = setTimeout(() => this.sink.end(new GatewayError(40142, 'Token expired')), Math.max(0, expires - this.clock.now()))
    }
    for (const ch of this.channels) this.hub.add(appId, ch, this)
    if (this.stats && !this.closed) {
      this.stats.connectionOpened(appId, this.principal.accountId)
      this.counted = true
    }
    for (let i = 0; i < this.channels.length; i++) {
      const ch = this.channels[i]!
      const from = opts.resumeFrom?.[i]
      if (from !== undefined) { this.positions[i] = from; continue }
      const position = await this.broker.position(appId, ch)
      this.positions[i] = position
      if (opts.rewind) {
        const recent = (await this.broker.history(appId, ch, { limit: opts.rewind, direction: 'backwards' }, { persisted: false }))
          .filter((m) => m.serial <= position).reverse()
        if (recent.length) this.positions[i] = serialBefore(recent[0]!.serial)
        ;(this.rewound ??= [])[i] = recent
      }
    }
    this.sink.begin(this.positions)
  }

  /** Replays (rewind or resume), then hands on what arrived live meanwhile and goes live. */
  async replay(opts: SessionStart): Promise<void> {
    for (let i = 0; i < this.channels.length && !this.closed; i++) {
      const from = opts.resumeFrom?.[i]
      if (from === undefined) { this.forward(i, this.rewound?.[i] ?? []); continue }
      const ch = this.channels[i]!
      const { messages, gap } = await this.broker.readAfter(this.principal.appId, ch, from, opts.replayLimit)
      if (gap) this.sink.notice(new GatewayError(80008, `Unable to resume channel "${ch}" exactly: messages after the given event id are no longer retained; continuing live`))
      this.forward(i, messages)
    }
    this.rewound = undefined
    this.replaying = false
    const buffered = this.buffered ?? []
    this.buffered = undefined
    for (const [i, batch] of buffered) this.forward(i, batch)
  }

  async start(opts: SessionStart): Promise<void> {
    await this.prepare(opts)
    await this.replay(opts)
  }

  deliver(channel: string, batch: Message[]): void {
    const i = this.index ? this.index.get(channel) : this.channels.indexOf(channel)
    if (i === undefined || i < 0 || this.closed) return
    if (this.replaying) (this.buffered ??= []).push([i, batch])
    else this.forward(i, batch)
  }

  /** Hands on what is newer than the channel's position; the shared batch is passed as is when all of it is new. */
  private forward(i: number, batch: Message[]) {
    if (batch.length === 0 || this.closed) return
    const pos = this.positions[i]!
    let out = batch
    if (batch[0]!.serial <= pos) {
      out = batch.filter((m) => m.serial > pos)
      if (out.length === 0) return
    }
    this.positions[i] = out[out.length - 1]!.serial
    this.sink.deliver(i, out)
    this.stats?.messagesDelivered(this.principal.appId, this.principal.accountId, out.length)
  }

  /** The credentials the stream was opened with. */
  get principalOf(): Principal { return this.principal }

  disconnect(): void {
    this.sink.close()
    this.close()
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    if (this.expiry) clearTimeout(this.expiry)
    for (const ch of this.channels) this.hub.remove(this.principal.appId, ch, this)
    if (this.counted) this.stats?.connectionClosed(this.principal.appId)
  }
}

/** The serial immediately below `serial`. */
function serialBefore(serial: string): string {
  const p = parseSerial(serial)!
  return p.seq > 0 ? formatSerial(p.ms, p.seq - 1) : formatSerial(p.ms - 1, 999_999)
}
