import { GatewayError } from '../../errors'
import { authorize } from '../auth/authorize'
import type { Authenticator } from '../auth/authenticator'
import type { Principal } from '../auth/principal'
import { IdGenerator } from '../model/ids'
import { parseSerial } from '../model/serial'
import type { Broker, Clock, ControlStore, RevocationStore, Timers } from '../ports'
import type { TokenRevocation } from '../types'
import type { StatsService } from '../stats/stats-service'
import { EphemeralHold, type HeldKinds } from './ephemeral-hold'
import type { Hub } from './hub'
import { STREAM_ROLE, type Occupancy } from './occupancy'
import { channelsHash, decodeEventId } from './resume-token'
import { StreamSession, type RewindView, type SessionSink } from './session'
import type { ChannelFilters, CompiledFilter } from './channel-filters'
import type { DeliveryStages } from './delivery-stages'

/** What a transport asks for when it opens a stream (names already checked with checkChannelName). */
export interface OpenStream {
  principal: Principal
  channels: string[]
  /** Resume token of an earlier stream of the same channel list (its last event id). */
  resumeToken?: string
  /** Resume positions per channel in the transport's own form (a realtime channelSerial); undefined: fresh. */
  positions?: Array<string | undefined>
  /** Deliver up to this many recent entries per channel first (fresh channels only). */
  rewind?: number
  /** With `rewind`: only entries of this last window (ms). */
  rewindMs?: number
  /**
   * Deliver only the messages that pass this (a filtered channel, see channels/filtered-channel.ts;
   * a stream of one channel). It runs shared with the channel's other subscribers of the same
   * expression, within the channel's filter budget (channel-filters.ts).
   */
  filter?: CompiledFilter
  /**
   * The transport tracks the connection itself (a realtime connection holds many sessions): the
   * session counts no connection in stats and sets no expiry timer.
   */
  managed?: boolean
  /** The capability operation each channel needs (default `subscribe`; an object-only attachment: `object-subscribe`). */
  operation?: string
  /**
   * The transport delivers entries that go only live (summaries, annotations): while the session
   * is not live it keeps each message's latest summary and counts the annotations it misses
   * (ephemeral-hold.ts).
   */
  held?: HeldKinds
  /**
   * The append rollup window the client asked for (ms, 0 to MAX_APPEND_ROLLUP_WINDOW_MS; 0: every
   * append as it comes): the `appendRollupWindow` transport param. Default APPEND_ROLLUP_WINDOW_MS.
   */
  appendRollupWindowMs?: number
}

/** Something open on this node under a set of credentials: a stream, or a realtime connection. */
export interface CredentialHolder {
  readonly principalOf: Principal
  /** The credentials are no longer valid: end with this error. */
  end(err: GatewayError): void
}

/**
 * Opening and tracking subscription streams, for every transport: authorises each channel,
 * decodes the resume position, builds the session, fixes the start, replays, goes live, and ends
 * streams whose credentials stop being valid (key revoked, app disabled, token revoked). A
 * transport adds only its framing: it gives a sink and writes what the sink receives.
 */
export class Streams {
  private readonly live = new Set<StreamSession>()
  private readonly holders = new Set<CredentialHolder>()
  private readonly ids = new IdGenerator()

  constructor(
    private readonly hub: Hub,
    private readonly occupancy: Occupancy,
    private readonly broker: Broker,
    private readonly auth: Authenticator,
    control: ControlStore,
    revocations: RevocationStore,
    private readonly clock: Clock,
    private readonly timers: Timers,
    private readonly stats: StatsService,
    private readonly filters: ChannelFilters,
    private readonly rewindView?: RewindView,
    private readonly stages?: DeliveryStages,
    /** Admits a channel as active on its account before it is subscribed (active-channels.ts). */
    private readonly admit?: (p: Principal, channel: string) => Promise<void>,
  ) {
    // a revoked key (or a disabled app) ends the streams opened with it, on every node
    control.onChange((e) => {
      if (e.kind === 'key' || e.kind === 'app') this.revalidate((p) => !e.appId || p.appId === e.appId)
    })
    // so does a token revocation, once it applies (at once, or after the reauth margin)
    revocations.onChange((rs) => this.onRevocations(rs))
  }

  /**
   * A stream's session, checked (every channel authorised, the resume token decoded) and tracked
   * but not started: the transport keeps it (to close it when the client goes) and then calls
   * `start`.
   */
  create(req: OpenStream, sink: SessionSink): StreamSession {
    for (const ch of req.channels) authorize(req.principal, ch, req.operation ?? 'subscribe')
    let resumeFrom: Array<string | undefined> | undefined = req.positions
    if (req.resumeToken) {
      resumeFrom = decodeEventId(req.resumeToken, req.channels)
      if (!resumeFrom) throw new GatewayError(40003, 'Invalid lastEvent: not an event id of a stream of these channels')
    }
    const session = new StreamSession(
      this.hub,
      this.broker,
      this.clock,
      this.timers,
      req.principal,
      this.ids.next(),
      req.channels,
      sink,
      this.stats,
      req.managed,
      this.rewindView,
    )
    session.startAt = {
      resumeFrom,
      rewind: resumeFrom?.some((p) => p !== undefined) ? 0 : req.rewind,
      rewindMs: req.rewindMs,
    }
    // an event stream counts in each channel's occupancy; a managed session's transport counts
    // its attachments itself
    if (!req.managed) for (const ch of req.channels) this.occupancy.attach(req.principal.appId, ch, STREAM_ROLE)
    if (req.filter) {
      if (req.channels.length !== 1) throw new GatewayError(40010, 'A filtered stream has one channel')
      session.filter = this.filters.acquire(req.principal.appId, req.channels[0]!, req.filter)
    }
    if (req.held) session.hold = new EphemeralHold(req.held)
    if (req.appendRollupWindowMs !== undefined)
      session.stageRequest = { appendRollupWindowMs: req.appendRollupWindowMs }
    session.owner = this
    this.live.add(session)
    return session
  }

  /** A session closed: no longer tracked, no longer counted. */
  closed(session: StreamSession): void {
    if (!this.live.delete(session) || session.managed) return
    for (const ch of session.channels) this.occupancy.detach(session.principalOf.appId, ch, STREAM_ROLE)
  }

  /**
   * Starts a created session. Resolves once every channel is subscribed and its start fixed: from
   * then on nothing published is missed, so the transport may answer the client. The replay
   * (rewind or resume) then runs in the background; a backend failure during it ends the stream.
   */
  async start(session: StreamSession): Promise<void> {
    const start = session.startAt!
    session.startAt = undefined // held only until the session starts
    try {
      // the account's channel bounds (ACCOUNT_MAX_CHANNELS, ACCOUNT_MAX_NEW_CHANNEL_RATE)
      if (this.admit) for (const ch of session.channels) await this.admit(session.principalOf, ch)
      // delivery stages by the channels' rules (delivery-stages.ts), before anything is delivered
      await this.stages?.install(
        session,
        session.channels.map((_c, i) => start.resumeFrom?.[i] !== undefined),
      )
      await session.prepare(start)
    } catch (e) {
      session.close()
      throw e instanceof GatewayError ? e : new GatewayError(50003, 'Stream could not start: backend unavailable')
    }
    session.replay(start).catch((e) => {
      session.end(e instanceof GatewayError ? e : new GatewayError(50003, 'Stream interrupted: backend unavailable'))
    })
  }

  /** The channel's newest serial (or one below any future one): where a fresh subscriber starts. */
  position(appId: string, channel: string): Promise<string> {
    return this.broker.position(appId, channel)
  }

  /** Whether a subscriber that last saw `serial` can resume exactly (nothing after it has left retention). */
  async canResume(appId: string, channel: string, serial: string): Promise<boolean> {
    if (!parseSerial(serial)) return false
    return !(await this.broker.readAfter(appId, channel, serial, 1)).gap
  }

  /** The resume-token prefix of a channel list (the same list always gives the same one). */
  tokenPrefix(channels: string[]): string {
    return channelsHash(channels)
  }

  /** Streams open on this node. */
  get size(): number {
    return this.live.size
  }

  /** Ends `holder` when its credentials stop being valid (like a stream); returns the way to stop watching. */
  watch(holder: CredentialHolder): () => void {
    this.holders.add(holder)
    return () => this.holders.delete(holder)
  }

  /** Ends every stream and holder among those `which` selects whose credentials no longer hold. */
  private revalidate(which: (p: Principal) => boolean) {
    for (const session of [...this.live, ...this.holders]) {
      const p = session.principalOf
      if (!which(p)) continue
      // only a refusal ends a stream: a backend that cannot answer right now is no verdict
      this.auth.revalidate(p).catch((err) => {
        if (err instanceof GatewayError && err.statusCode < 500) session.end(err)
      })
    }
  }

  /** Revalidates the revocable streams of the keys concerned now, and again when a postponed revocation applies. */
  private onRevocations(rs: TokenRevocation[]) {
    const keys = new Set(rs.map((r) => r.keyName))
    const check = () => this.revalidate((p) => p.revocable !== undefined && keys.has(p.keyName))
    check()
    const now = this.clock.now()
    for (const at of new Set(rs.map((r) => r.appliesAt))) if (at > now) this.timers.after(at - now, check)
  }

  /** Closes every stream (shutdown): clients resume elsewhere or after the restart. */
  disconnectAll(): number {
    const all = [...this.live]
    for (const session of all) session.disconnect()
    return all.length
  }
}
