import { OutboundBudget } from './outbound-budget'
import type { LiveOnlyKeeper } from './live-only-keeper'
import type { Credentials } from '../auth/authenticator'
import { ConnectionKeys } from '../auth/connection-keys'
import type { Principal } from '../auth/principal'
import type { Message } from '../types'
import { asGatewayError, GatewayError } from '../../errors'
import type { Logger } from '../../lib/logger'
import { AckQueue } from './acks'
import { slowCut, slowPaused } from './metrics'
import type { Attachment } from './attachment'
import { ChannelOps } from './channel-ops'
import type { ConnectionHost } from './host'
import { Operations } from './operations'
import { PRESENCE, PresenceOps } from './presence-ops'
import { MESSAGE } from './publishes'
import { objectDetails, OBJECT } from './object-ops'
import { ANNOTATION } from './annotation-ops'
import { Action, wireError, type ProtocolMessage } from './protocol'
import type { ConnectionServices } from './services'
import type { RealtimeSettings } from './settings'
import type { DeliveryFilter, Transport } from './transport'

/** What the connect request asked for (the transport's query parameters). */
export interface ConnectParams {
  heartbeats: boolean
  echo: boolean
  credentials: Credentials
  /** Connection key of `resume=` or `recover=`. */
  resumeKey?: string
  /** How long members stay after the connection drops (ms; the `remainPresentFor` transport param). */
  remainPresentForMs?: number
  /** The append rollup window of its subscriptions (ms; the `appendRollupWindow` transport param). */
  appendRollupWindowMs?: number
}

/** Why a connection ended, for its log line (info: the server ended it for a fault; else debug). */
interface Ending {
  reason: string
  err?: GatewayError
  level?: 'debug' | 'info'
}

/** Bytes of answers a connection may queue on a socket over REALTIME_BUFFER_BYTES before it is cut. */
const MAX_UNREAD_ANSWERS = 1024 * 1024

/**
 * One realtime connection (protocol version 6) over one transport (transport.ts): CONNECTED and its details,
 * channel attachments (channel-ops.ts), publishes answered by ordered ACK/NACK after the broker has
 * them, heartbeats, re-authentication and token expiry, CLOSE, and the error rules of the
 * protocol (a connection-level ERROR is fatal; a channel-level one fails that channel only).
 */
export class Connection implements ConnectionHost {
  readonly echo: boolean
  /** The outbound message budget (REALTIME_MAX_OUTBOUND_RATE), when bounded. */
  readonly outbound?: OutboundBudget
  readonly heartbeats: boolean
  readonly acks: AckQueue
  readonly channels: ChannelOps
  readonly presence: PresenceOps
  /** Answers MESSAGE, PRESENCE, ANNOTATION and OBJECT, all through one skeleton (operations.ts). */
  readonly operations: Operations
  lastSent = 0
  private closed = false
  /** Bytes of answers sent since the socket went over REALTIME_BUFFER_BYTES (reset when it drains). */
  private unread = 0
  /** Deliveries were refused room since the socket last drained (counted once as a pause). */
  private paused = false
  /** Set once DISCONNECTED is decided: no further frame is served, it goes out when the publishes are answered. */
  private leaving?: Promise<void>
  private renewTimer?: () => void
  /** The expiry of the token a renewal was asked for (AUTH): never asked twice for one token. */
  private renewalAskedFor?: number
  private expiryTimer?: () => void
  private unwatch?: () => void

  constructor(
    readonly core: ConnectionServices,
    readonly s: RealtimeSettings,
    /** This node, as `connectionDetails.serverId` tells the client (debugging). */
    private readonly serverId: string,
    /** What the client writes through: the adapter of its WebSocket, or of its comet requests. */
    private transport: Transport,
    private readonly params: ConnectParams,
    readonly id: string,
    public key: string,
    private principal: Principal,
    /** Called once when the connection goes: `abrupt` when the client may still resume it. */
    private readonly onGone: (conn: Connection, abrupt: boolean) => void,
    /** Lifecycle at debug, refusals at info; never a key, token or connection key. */
    readonly log: Logger,
  ) {
    const p = params
    this.echo = p.echo
    this.heartbeats = p.heartbeats
    this.acks = new AckQueue((pm) => this.send(pm), this.core.timers)
    this.presence = new PresenceOps(this)
    this.channels = new ChannelOps(this, this.presence)
    this.operations = new Operations(this, this.s.realtimeMaxInboundRate ?? 0)
    const outRate = this.s.realtimeMaxOutboundRate ?? 0
    if (outRate > 0) this.outbound = new OutboundBudget(outRate, this.core.clock)
  }

  /** The transport's wire format (diagnostics). */
  get format(): string {
    return this.transport.format
  }

  /** Whether client frames are still served (not once it closed, or DISCONNECTED is decided). */
  get receiving(): boolean {
    return !this.closed && !this.leaving
  }

  get principalOf(): Principal {
    return this.principal
  }

  /** The append rollup window its subscriptions asked for (the `appendRollupWindow` transport param). */
  get appendRollupWindowMs(): number | undefined {
    return this.params.appendRollupWindowMs
  }

  pendingAttach(channel: string): Promise<void> | undefined {
    return this.channels.pending(channel)
  }

  attachedModes(channel: string): number | undefined {
    return this.channels.modesOf(channel)
  }

  inOrder(channel: string, op: () => Promise<void>): void {
    this.channels.inOrder(channel, op)
  }

  /**
   * This node holds the connection now (a resumed one learns the presence members it still has),
   * then CONNECTED (with `error` when a resume failed); the credentials are watched from then on.
   */
  async start(resumed: boolean, error?: GatewayError): Promise<void> {
    await this.core.connectionPresence.claim(this.id)
    if (resumed) await this.presence.restore()
    this.unwatch = this.core.streams.watch(this)
    this.scheduleExpiry()
    const pm: Record<string, unknown> = {
      action: Action.CONNECTED,
      connectionId: this.id,
      connectionDetails: this.details(),
    }
    if (error) pm.error = error.toBody()
    this.send(pm)
    this.core.stats.connectionOpened(this.principal.appId, this.principal.accountId)
  }

  private details(): Record<string, unknown> {
    const d: Record<string, unknown> = {
      connectionKey: this.key,
      maxMessageSize: this.s.maxMessageSize,
      maxFrameSize: this.s.realtimeMaxFrameSize,
      maxInboundRate: this.s.realtimeMaxInboundRate || 1000,
      connectionStateTtl: this.s.connectionStateTtlMs,
      maxIdleInterval: this.s.realtimeMaxIdleIntervalMs,
      serverId: this.serverId,
      ...objectDetails(this.core), // LiveObjects (object-ops.ts)
    }
    if (this.principal.clientId !== undefined) d.clientId = this.principal.clientId
    return d
  }

  /**
   * Sends a protocol message other than a delivery (an answer, a heartbeat, ATTACHED...). Those
   * do not pause with the deliveries when the socket holds more than REALTIME_BUFFER_BYTES
   * unsent: they are counted then, and a client that goes on making the server answer without
   * reading is cut (it resumes once it reads again), so what a socket holds stays bounded.
   */
  send(pm: object): void {
    if (this.closed) return
    const over = this.transport.bufferedBytes() > this.s.realtimeBufferBytes
    const bytes = this.transport.send(pm)
    this.lastSent = this.core.clock.now()
    if (over) {
      this.unread += bytes
      if (this.unread > MAX_UNREAD_ANSWERS) return this.cut()
    }
  }

  /** Delivers a batch of a channel; false when the client now holds more unread bytes than allowed (the session pauses). */
  deliver(channel: string, batch: Message[], filter: DeliveryFilter): boolean {
    if (this.closed) return true
    this.transport.deliver(channel, batch, filter)
    return this.wrote()
  }

  /** Sends a protocol message of the server's own accord (SYNC pages): it pauses with the deliveries. */
  push(pm: object): boolean {
    if (this.closed) return true
    this.transport.send(pm)
    return this.wrote()
  }

  private wrote(): boolean {
    this.lastSent = this.core.clock.now()
    if (this.transport.bufferedBytes() <= this.s.realtimeBufferBytes) return true
    if (!this.paused) {
      this.paused = true
      slowPaused.value++
    }
    return false
  }

  /**
   * One protocol message from the client (decoded by the transport, which fails the connection
   * on a frame that is not one). Problems with the message itself fail the connection; others are answered.
   */
  receive(pm: ProtocolMessage): void {
    if (this.closed || this.leaving) return
    switch (pm.action) {
      case Action.HEARTBEAT:
        if (pm.id !== undefined) this.send({ action: Action.HEARTBEAT, id: pm.id })
        return
      case Action.ATTACH:
        return this.channels.attach(pm)
      case Action.DETACH:
        return this.channels.detach(pm)
      case Action.MESSAGE:
        return this.operations.operate(pm, MESSAGE, this)
      case Action.PRESENCE:
        return this.operations.operate(pm, PRESENCE, this.presence)
      case Action.SYNC:
        return this.channels.sync(pm)
      case Action.ANNOTATION:
        return this.operations.operate(pm, ANNOTATION, this)
      case Action.OBJECT:
        return this.operations.operate(pm, OBJECT, this) // LiveObjects (object-ops.ts)
      case Action.AUTH:
        return void this.reauthorize(pm)
      case Action.CLOSE:
        this.send({ action: Action.CLOSED })
        this.gone(false, { reason: 'closed by the client' })
        // closed for good: a recovery key of it no longer resumes it, here or elsewhere
        this.core.endedConnections.closed(this.id, this.principal.appId).catch(() => {})
        this.transport.close()
        return
      case Action.DISCONNECT:
        this.transport.close()
        return
      case Action.ACTIVATE:
        return
      default:
        return this.fail(new GatewayError(40000, `Invalid protocol message: unknown action ${pm.action}`))
    }
  }

  /** AUTH from the client: new credentials of the same identity; CONNECTED again with the same id. */
  private async reauthorize(pm: ProtocolMessage) {
    const token = pm.auth?.accessToken
    try {
      if (typeof token !== 'string' || !token) throw new GatewayError(40101, 'AUTH without an accessToken')
      const creds = this.params.credentials
      const next = await this.core.auth.authenticate({
        accessToken: token,
        clientId: creds.clientId,
        secure: creds.secure,
      })
      // the connection stays in its app: a token of another app would carry it across tenants
      if (next.appId !== this.principal.appId)
        throw new GatewayError(40101, 'Invalid credentials: the token is of another app than the connection')
      const had = this.principal.clientId
      if (had !== undefined && had !== '*' && next.clientId !== had)
        throw new GatewayError(40102, `The new token is for clientId "${next.clientId}", not "${had}"`)
      // the client keeps the key it was given first: it resumes as the identity it has now
      if (!ConnectionKeys.same(next, this.principal)) await this.core.connectionKeys.grant(this.id, next)
      if (this.closed) return
      this.principal = next
      this.scheduleExpiry()
      this.channels.reauthorized(next)
      this.send({ action: Action.CONNECTED, connectionId: this.id, connectionDetails: this.details() })
    } catch (e) {
      this.fail(asGatewayError(e))
    }
  }

  /**
   * The hosted service's rule: AUTH TOKEN_RENEW_LEAD_MS before a token expires, once per token,
   * and only to a token that has more than that left when it arrives (by a tenth of the lead at
   * least, so tokens that barely outlive the lead cannot make a renewal loop); a shorter-lived
   * token is let expire. At expiry, when no newer token came: DISCONNECTED 40142, which a client
   * that can renew answers by resuming with a new token, and one that cannot (a token literal,
   * which an AUTH request fails at once with 40171) by failing.
   */
  private scheduleExpiry() {
    this.renewTimer?.()
    this.expiryTimer?.()
    const expires = this.principal.expires
    if (expires === undefined) return
    const left = expires - this.core.clock.now()
    const lead = this.s.tokenRenewLeadMs
    if (this.renewalAskedFor !== expires && lead > 0 && left - lead >= lead / 10) {
      this.renewTimer = this.core.timers.after(left - lead, () => {
        this.renewalAskedFor = expires
        this.send({ action: Action.AUTH })
      })
    }
    this.expiryTimer = this.core.timers.after(
      Math.max(0, left),
      () => void this.disconnect(new GatewayError(40142, 'Token expired')),
    )
  }

  /** Keeps the client's idle timer fed: a HEARTBEAT frame (heartbeats=true) or a ping, when nothing else went out. */
  heartbeat(now: number): void {
    if (this.closed || now - this.lastSent < this.s.realtimeMaxIdleIntervalMs / 2) return
    if (this.heartbeats || !this.transport.ping()) this.send({ action: Action.HEARTBEAT })
    else this.lastSent = now
  }

  /** The socket has room again: paused subscriptions catch up from the log. */
  drained(): void {
    this.unread = 0
    this.paused = false
    this.channels.drained()
    this.roomMade()
  }

  /** Waiting for the socket to drain (LiveObjects sync pages: object-ops.ts). */
  private roomWaiters?: Array<() => void>
  /** Resolves once the socket holds no more than REALTIME_BUFFER_BYTES unsent (at once when closed). */
  room(): Promise<void> {
    if (this.closed || this.transport.bufferedBytes() <= this.s.realtimeBufferBytes) return Promise.resolve()
    return new Promise((resolve) => (this.roomWaiters ??= []).push(resolve))
  }
  private roomMade() {
    // a drain may leave more than the budget unsent: the waiters go on waiting then
    if (!this.closed && this.transport.bufferedBytes() > this.s.realtimeBufferBytes) return
    for (const resolve of this.roomWaiters?.splice(0) ?? []) resolve()
  }

  /**
   * A subscription ended with an error: credentials → the connection fails; a channel operation
   * failure (90000: a filter refused for its cost) → that channel fails; otherwise the client resumes.
   */
  ended(a: Attachment, err: GatewayError): void {
    if (err.code === 90000) return this.channels.failed(a, err)
    if (err.code === 80020) slowCut.value++
    if (err.statusCode === 401 || err.statusCode === 403) this.fail(err)
    else void this.disconnect(err)
  }

  /** The credentials are no longer valid (revoked key, disabled app): fatal. */
  end(err: GatewayError): void {
    this.fail(err)
  }

  /** Connection-level ERROR: the client's connection fails (token errors make it renew and reconnect). */
  fail(err: GatewayError): void {
    if (this.closed) return
    this.send({ action: Action.ERROR, error: wireError(err) })
    this.gone(false, { reason: 'failed', err, level: 'info' })
    this.transport.close()
  }

  /**
   * DISCONNECTED: the client reconnects and resumes (shutdown, token expiry, too slow). Publishes
   * the broker is still taking are answered first (frames received meanwhile are not served: the
   * client sends them again after it resumed): once DISCONNECTED is out, an ACK is lost, and a node
   * that restarted (or another node) would not know that their resend was published already.
   * Resolves once the connection is gone.
   */
  disconnect(err?: GatewayError): Promise<void> {
    if (this.closed) return Promise.resolve()
    this.leaving ??= this.acks.settled().then(() => {
      if (this.closed) return
      this.send(err ? { action: Action.DISCONNECTED, error: err.toBody() } : { action: Action.DISCONNECTED })
      this.gone(true, { reason: 'disconnected by the server', err })
      this.transport.close()
    })
    return this.leaving
  }

  /** The transport closed (by either side; `why` as the transport tells it, e.g. a WebSocket close code). */
  closedByTransport(why?: string): void {
    this.gone(true, { reason: why === undefined ? 'socket closed' : `socket closed (${why})` })
  }

  /** Cuts the socket without a goodbye, as a network failure would (operations, tests): the client resumes. */
  terminate(): void {
    this.transport.terminate()
  }

  /** Keepers of live-only entries its earlier transport left (a resume), by channel, until it attaches those channels again. */
  private kept?: Map<string, LiveOnlyKeeper>
  private keptTimer?: () => void
  /** What it leaves of its channels' live-only entries when it goes abruptly or is superseded (registry.ts hands them to its resume). */
  leftKeepers?: Map<string, LiveOnlyKeeper>

  /** Takes over the keepers its dropped transport left; those of channels not attached again within the state TTL are let go. */
  adoptKeepers(keepers: Map<string, LiveOnlyKeeper> | undefined): void {
    if (!keepers?.size) return
    this.kept = keepers
    this.keptTimer = this.core.timers.after(this.s.connectionStateTtlMs, () => this.releaseKept())
  }

  takeKeeper(channel: string): LiveOnlyKeeper | undefined {
    const k = this.kept?.get(channel)
    if (k) this.kept!.delete(channel)
    return k
  }

  private releaseKept() {
    for (const k of this.kept?.values() ?? []) k.release()
    this.kept = undefined
    this.keptTimer?.()
    this.keptTimer = undefined
  }

  /** A newer transport of the same connection (a resume) takes over: this socket goes quietly. */
  supersede(): void {
    this.gone(false, { reason: 'superseded by its resume on a new socket' }, true)
    this.transport.terminate()
  }

  /** The client does not read what it asks for: its socket is cut, and it may resume once it reads again. */
  private cut(): void {
    slowCut.value++
    this.gone(true, { reason: 'cut: the client does not read the answers it asks for', level: 'info' })
    this.transport.terminate()
  }

  /**
   * The connection is gone from this node. `abrupt`: the client may resume it (here or on another
   * node), so its presence members stay for the grace period; otherwise they leave now. A
   * connection superseded by its own resume here leaves them to the new transport. One log line
   * says why: at info when the server ended it with an error, else at debug.
   */
  private gone(abrupt: boolean, why: Ending, superseded = false) {
    if (this.closed) return
    this.closed = true
    for (const resolve of this.roomWaiters?.splice(0) ?? []) resolve()
    const { reason, err, level = 'debug' } = why
    if (this.log.enabled(level)) {
      const fields: Record<string, unknown> = {
        connectionId: this.id,
        appId: this.principal.appId,
        reason,
        resumable: abrupt,
      }
      if (err) Object.assign(fields, { code: err.code, statusCode: err.statusCode, error: err.message })
      this.log[level]('realtime connection ended', fields)
    }
    this.renewTimer?.()
    this.expiryTimer?.()
    this.unwatch?.()
    // the client may resume: what its channels get meanwhile of what no log keeps is kept for it
    // (with what it had not attached again since its own resume), before the sessions end
    if (abrupt || superseded) {
      const left = new Map(this.kept)
      // one budget for all of them: a connection that drops again holds no more than one drop's
      const earlier = left.values().next().value?.budget
      for (const [channel, k] of this.channels.keepers(earlier) ?? []) {
        left.get(channel)?.release()
        left.set(channel, k)
      }
      if (left.size) this.leftKeepers = left
      this.kept = undefined // handed on: not released below
    }
    this.releaseKept()
    this.channels.closeAll()
    const cp = this.core.connectionPresence
    if (abrupt) cp.dropped(this.id, this.params.remainPresentForMs ?? this.s.presenceGraceMs)
    else if (!superseded) this.presence.closed().catch(() => {})
    this.core.stats.connectionClosed(this.principal.appId)
    this.onGone(this, abrupt)
  }
}
