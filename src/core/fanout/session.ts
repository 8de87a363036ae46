import { GatewayError } from '../../errors'
import type { Principal } from '../auth/principal'
import type { Broker, Clock, Timers } from '../ports'
import type { Message } from '../types'
import { formatSerial, parseSerial } from '../model/serial'
import type { EphemeralHold } from './ephemeral-hold'
import type { Hub, Subscriber } from './hub'
import type { StatsService } from '../stats/stats-service'
import type { SharedFilter } from './channel-filters'

/** Where a session's output goes (a transport's writer). */
export interface SessionSink {
  /**
   * New entries of channel #`index`, in order, each once. `batch` may be shared: never change it.
   * Returns false when the transport now holds more unsent bytes than it allows: the session then
   * hands it nothing more until the transport calls `StreamSession.drained()`, and reads what was
   * published meanwhile from the channel's log (the backlog is a position, not a queue).
   */
  deliver(index: number, batch: Message[]): boolean
  /** Something the client must know that does not end the stream (e.g. a resume gap). */
  notice(err: GatewayError): void
  /**
   * Starting position of every channel, before any delivery: `positions` are where delivery
   * continues from (a resume point, or before the rewound entries), `heads` each channel's newest
   * serial when the session started.
   */
  begin(positions: string[], heads: string[]): void
  /** The server ends the stream (e.g. the token expired). */
  end(err: GatewayError): void
  /** The server closes the stream without an error (shutdown): the client reconnects and resumes. */
  close(): void
}

export interface SessionStart {
  /** Resume: last delivered serial per channel (from the client's last event id); undefined: fresh. */
  resumeFrom?: Array<string | undefined>
  /** Deliver up to this many recent entries per channel first (fresh streams only). */
  rewind?: number
  /** With `rewind`: only those of this last window (ms). */
  rewindMs?: number
}

/** What a rewind replays of a channel's rewound entries (mutable messages in their state then). */
export type RewindView = (appId: string, channel: string, entries: Message[]) => Promise<Message[]>

/** Entries read from the log per step of a replay or catch-up. */
const READ_CHUNK = 1000

/**
 * `reading`: replaying or catching up from the log (live batches are kept and handed on after,
 * de-duplicated by serial); `live`: batches go straight to the sink; `paused`: the sink is full,
 * live batches are dropped (the log has them) until it drains.
 */
type Mode = 'reading' | 'live' | 'paused'

/**
 * One subscription session over several channels: replays (rewind or resume) and then goes live,
 * delivering every entry once and in order per channel. Live deliveries that race a read of the
 * log are buffered and de-duplicated by serial, so resume is exact. A subscriber that cannot keep
 * up is paused at its position and later catches up from the log; it is cut (80020) only when
 * that position has left the channel's retention.
 */
export class StreamSession implements Subscriber {
  readonly clientId?: string
  /** Last delivered serial per channel: what an event id encodes. */
  readonly positions: string[]
  /** Channel -> position in `channels`, only for streams of many channels (memory per connection counts). */
  private readonly index?: Map<string, number>
  private mode: Mode = 'reading'
  private buffered?: Array<[number, Message[]]>
  private rewound?: Message[][]
  private closed = false
  /** Counted in the app's open connections (stats). */
  private counted = false
  /** Cancels the token's expiry timer. */
  private expiry?: () => void
  /** Where the session starts (set by the streams service that created it). */
  startAt?: SessionStart
  /**
   * A filtered channel's filter (one-channel sessions only): messages it refuses are skipped (live,
   * rewind, resume alike), presence passes; a filter refused for its cost ends the session.
   */
  filter?: SharedFilter
  /**
   * What the session keeps of the entries that go only live (annotations, summaries) while it is
   * not live (a realtime attachment that delivers them; see EphemeralHold). Without it, such
   * entries are dropped then, like everything the log gives back later.
   */
  hold?: EphemeralHold
  /** Told once when the session closes (the streams service that tracks it). */
  owner?: { closed(session: StreamSession): void }
  /** Delivery stages put in front of the sink (`interpose`), ended with the session. */
  private staged?: { dispose(): void }
  /**
   * Per channel, the serial of the first entry the hub handed this session (set once
   * `watchFirstLive` asked for it): what a keeper of a dropped connection hands on must be older.
   */
  firstLive?: Array<string | undefined>
  watchFirstLive(): void {
    this.firstLive ??= []
  }
  /** The stages a transport asked for, read when the session starts (streams.ts). */
  stageRequest?: { appendRollupWindowMs?: number }

  constructor(
    private readonly hub: Hub,
    private readonly broker: Broker,
    private readonly clock: Clock,
    private readonly timers: Timers,
    private principal: Principal,
    readonly connectionId: string,
    readonly channels: string[],
    private sink: SessionSink,
    private readonly stats?: StatsService,
    /** The transport manages the connection itself (token expiry, connection stats): the session does neither. */
    readonly managed = false,
    private readonly rewindView?: RewindView,
  ) {
    this.clientId = principal.clientId === '*' ? undefined : principal.clientId
    this.positions = channels.map(() => '')
    if (channels.length > 8) this.index = new Map(channels.map((c, i) => [c, i]))
  }

  /** Puts delivery stages (stages.ts) in front of the sink; before `prepare` only. */
  interpose(wrap: (sink: SessionSink) => SessionSink & { dispose(): void }): void {
    const staged = wrap(this.sink)
    this.sink = staged
    this.staged = staged
  }

  /**
   * Subscribes every channel and fixes its starting position. Once this resolves, every message
   * published afterwards will be delivered: answer the client only then.
   */
  async prepare(opts: SessionStart): Promise<void> {
    const { appId, expires } = this.principal
    if (expires !== undefined && !this.managed) {
      this.expiry = this.timers.after(Math.max(0, expires - this.clock.now()), () =>
        this.end(new GatewayError(40142, 'Token expired')),
      )
    }
    for (const ch of this.channels) this.hub.add(appId, ch, this)
    if (this.stats && !this.managed && !this.closed) {
      this.stats.connectionOpened(appId, this.principal.accountId)
      this.counted = true
    }
    const heads: string[] = []
    for (let i = 0; i < this.channels.length; i++) {
      const ch = this.channels[i]!
      const from = opts.resumeFrom?.[i]
      if (from !== undefined) {
        this.positions[i] = heads[i] = from
        continue
      }
      const position = await this.broker.position(appId, ch)
      this.positions[i] = heads[i] = position
      if (opts.rewind) {
        const recent = (
          await this.broker.history(
            appId,
            ch,
            {
              limit: opts.rewind,
              direction: 'backwards',
              // messages and their versions only, as the hosted service rewinds: presence (the
              // members come in SYNC) and LiveObjects operations neither count nor replay
              entries: 'versions',
              start: opts.rewindMs === undefined ? undefined : this.clock.now() - opts.rewindMs,
            },
            { persisted: false },
          )
        )
          .filter((m) => m.serial <= position)
          .reverse()
        if (recent.length) this.positions[i] = serialBefore(recent[0]!.serial)
        ;(this.rewound ??= [])[i] = this.rewindView ? await this.rewindView(appId, ch, recent) : recent
      }
    }
    this.sink.begin(this.positions, heads)
  }

  /** Replays (rewind or resume), then hands on what arrived live meanwhile and goes live. */
  async replay(opts: SessionStart): Promise<void> {
    for (let i = 0; i < this.channels.length; i++) {
      if (this.mode !== 'reading') return
      if (opts.resumeFrom?.[i] === undefined) {
        if (!this.forward(i, this.rewound?.[i] ?? [])) return this.pause()
      } else if ((await this.readOn(i, 'notice')) === 'full') return this.pause()
    }
    this.rewound = undefined
    this.goLive()
  }

  async start(opts: SessionStart): Promise<void> {
    await this.prepare(opts)
    await this.replay(opts)
  }

  deliver(channel: string, batch: Message[]): void {
    if ((this.mode === 'paused' && !this.hold) || this.closed) return
    const i = this.index ? this.index.get(channel) : this.channels.indexOf(channel)
    if (i === undefined || i < 0) return
    if (this.firstLive && this.firstLive[i] === undefined) this.firstLive[i] = batch[0]!.serial
    if (this.mode === 'live') {
      if (!this.forward(i, batch)) this.pause()
      return
    }
    // not live: what the log keeps is read from it later; the hold keeps (or counts) the rest
    const rest = this.hold ? this.hold.take(i, batch) : batch
    if (this.mode === 'reading' && rest.length) (this.buffered ??= []).push([i, rest])
  }

  /**
   * The transport has room again: read what the channels' logs got since the positions, then go
   * live. A position that left retention meanwhile cannot be caught up exactly: the subscriber is
   * cut (80020) and resumes with its last position, which tells it of the gap.
   */
  async drained(): Promise<void> {
    if (this.mode !== 'paused' || this.closed) return
    this.mode = 'reading'
    try {
      for (let i = 0; i < this.channels.length; i++) {
        const r = await this.readOn(i, 'cut')
        if (r === 'full') return this.pause()
        if (r === 'gap' || this.closed) return
      }
    } catch (e) {
      return this.end(
        e instanceof GatewayError ? e : new GatewayError(50003, 'Stream interrupted: backend unavailable'),
      )
    }
    this.goLive()
  }

  private pause() {
    this.mode = 'paused'
    this.buffered = undefined
    this.rewound = undefined
  }

  private goLive() {
    if (this.closed || this.mode !== 'reading') return
    const buffered = this.buffered ?? []
    this.buffered = undefined
    this.mode = 'live'
    if (this.hold && !this.releaseHeld()) return this.pause()
    for (const [i, batch] of buffered) if (!this.forward(i, batch)) return this.pause()
  }

  /**
   * Hands on what the hold kept while the session was not live (each message's latest summary)
   * and tells the sink of the annotations it missed then (80020: continuity lost; the client
   * reads them with their message's annotations). False when the sink is full.
   */
  private releaseHeld(): boolean {
    let room = true
    for (let i = 0; i < this.channels.length && !this.closed; i++) {
      const { summaries, missed } = this.hold!.release(i)
      if (missed)
        this.sink.notice(
          new GatewayError(
            80020,
            `Continuity lost on channel "${this.channels[i]}": ${missed} annotation events or summaries were not delivered while this client was not reading; read them with the annotations of their messages`,
          ),
        )
      let out = summaries
      if (this.filter && out.length) {
        const kept = this.filter.apply(out)
        if (kept === undefined) {
          this.end(this.filter.refused())
          return true
        }
        out = kept
      }
      if (!out.length) continue
      this.stats?.messagesDelivered(this.principal.appId, this.principal.accountId, out.length)
      if (!this.sink.deliver(i, out)) room = false
    }
    return room
  }

  /**
   * Hands on channel #i's log after its position, chunk by chunk, up to its end. A position
   * below the retained log is a gap: `notice` tells the client and goes on from what is retained
   * (a resume from an old event id), `cut` ends the stream (a subscriber too slow for retention).
   */
  private async readOn(i: number, onGap: 'notice' | 'cut'): Promise<'done' | 'full' | 'gap'> {
    const ch = this.channels[i]!
    for (;;) {
      const { messages, gap } = await this.broker.readAfter(this.principal.appId, ch, this.positions[i]!, READ_CHUNK)
      if (this.closed) return 'done'
      if (gap && onGap === 'cut') {
        this.end(
          new GatewayError(
            80020,
            `Subscriber too slow: channel "${ch}" moved on past what is retained while this client was not reading`,
          ),
        )
        return 'gap'
      }
      if (gap)
        this.sink.notice(
          new GatewayError(
            80008,
            `Unable to resume channel "${ch}" exactly: messages after the given event id are no longer retained; continuing live`,
          ),
        )
      if (!this.forward(i, messages)) return 'full'
      if (messages.length < READ_CHUNK) return 'done'
    }
  }

  /**
   * Hands on what is newer than the channel's position (the shared batch as is when all of it is
   * new). False when the sink is full.
   */
  private forward(i: number, batch: Message[]): boolean {
    if (batch.length === 0 || this.closed) return true
    const pos = this.positions[i]!
    let out = batch
    if (batch[0]!.serial <= pos) {
      out = batch.filter((m) => m.serial > pos)
      if (out.length === 0) return true
    }
    this.positions[i] = out[out.length - 1]!.serial
    if (this.filter) {
      const kept = this.filter.apply(out)
      if (kept === undefined) {
        this.end(this.filter.refused())
        return true
      }
      if (kept.length === 0) return true
      out = kept
    }
    this.stats?.messagesDelivered(this.principal.appId, this.principal.accountId, out.length)
    return this.sink.deliver(i, out)
  }

  /** The credentials the stream was opened with (or renewed to). */
  get principalOf(): Principal {
    return this.principal
  }

  /** New credentials of the same identity (a realtime re-authentication). */
  renew(principal: Principal): void {
    this.principal = principal
  }

  disconnect(): void {
    this.sink.close()
    this.close()
  }

  /** The server ends the stream with an error the client sees (revoked key, backend failure). */
  end(err: GatewayError): void {
    if (this.closed) return
    this.sink.end(err)
    this.close()
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.expiry?.()
    this.staged?.dispose()
    this.filter?.release()
    for (const ch of this.channels) this.hub.remove(this.principal.appId, ch, this)
    if (this.counted) this.stats?.connectionClosed(this.principal.appId)
    this.owner?.closed(this)
  }
}

/** The serial immediately below `serial`. */
function serialBefore(serial: string): string {
  const p = parseSerial(serial)!
  return p.seq > 0 ? formatSerial(p.ms, p.seq - 1) : formatSerial(p.ms - 1, 999_999)
}
