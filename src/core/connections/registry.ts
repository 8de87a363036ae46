import { newConnectionId } from '../auth/connection-keys'
import { asGatewayError, GatewayError } from '../../errors'
import type { Logger } from '../../lib/logger'
import { metrics, trackConnections } from '../../lib/metrics'
import type { PublishMemory } from './acks'
import { Connection, type ConnectParams } from './connection'
import { Action } from './protocol'
import type { ConnectionServices } from './services'
import type { RealtimeLimits } from './settings'
import type { Transport } from './transport'
import type { LiveOnlyKeeper } from './live-only-keeper'

/** How long a connection resumed without its earlier node's publish memory checks publishes against the log (ms). */
const UNKNOWN_PAST_MS = 15_000

/** What a dropped connection leaves behind on this node, for a resume within the state TTL. */
interface Remains {
  memory: PublishMemory
  until: number
  /** The key this node issued the connection (over once the state TTL passes here). */
  key: string
  /** The connection's app (its records count against that app's bound). */
  appId: string
  /** What its channels got of their live-only entries since it dropped (live-only-keeper.ts), for its resume. */
  keepers?: Map<string, LiveOnlyKeeper>
}

const releaseKeepers = (r: Remains | undefined) => {
  for (const k of r?.keepers?.values() ?? []) k.release()
}

/**
 * The realtime connections of this node, whatever transport carries them: the live ones, and
 * what the dropped ones left for a resume within the state TTL. It decides how a connect request
 * resumes (the same connection on a new transport, its publish memory adopted, or a fresh one with
 * the reason), keeps idle clients fed (heartbeats), expires what the dropped ones left once the
 * TTL is over (their key then no longer resumes anywhere), and disconnects them all on shutdown.
 */
export class ConnectionRegistry {
  private readonly live = new Map<string, Connection>()
  private readonly remains = new Map<string, Remains>()
  private readonly untrack: Array<() => void>
  private readonly stopTimer: () => void

  constructor(
    private readonly core: ConnectionServices,
    private readonly s: RealtimeLimits,
    /** This node, as `connectionDetails.serverId` tells the client. */
    private readonly serverId: string,
    private readonly log: Logger,
  ) {
    this.untrack = [
      trackConnections('realtime', () => this.live.size),
      metrics.gauge('gateway_realtime_attachments', 'Attached channels of realtime connections on this node.', () => {
        let n = 0
        for (const c of this.live.values()) n += c.channels.size
        return n
      }),
      metrics.gauge(
        'gateway_presence_members',
        'Presence members entered over the realtime connections open on this node.',
        () => {
          let n = 0
          for (const c of this.live.values()) n += c.presence.members
          return n
        },
      ),
    ]
    this.stopTimer = core.timers.every(Math.max(100, Math.floor(s.realtimeMaxIdleIntervalMs / 4)), () => this.tick())
  }

  /** Heartbeats where nothing went out lately; what dropped connections left is over once their TTL passed. */
  tick(): void {
    const now = this.core.clock.now()
    for (const c of this.live.values()) c.heartbeat(now)
    for (const [id, r] of this.remains) if (r.until < now) this.expire(id, r)
  }

  /** Open connections on this node. */
  get size(): number {
    return this.live.size
  }

  /** A connection by id (tests, operations). */
  connection(id: string): Connection | undefined {
    return this.live.get(id)
  }

  /** A dropped connection not resumed here within the state TTL: the key it has from here is over on every node. */
  private expire(id: string, r: Remains) {
    this.remains.delete(id)
    releaseKeepers(r)
    this.core.endedConnections
      .expired(r.key, r.appId)
      .catch((e) => this.log.warn('could not record an expired connection', { error: String(e) }))
  }

  /** A connection is live here (its account's count grows unless it replaces itself: a resume on a new transport). */
  private addLive(conn: Connection) {
    if (!this.live.has(conn.id)) this.core.accountConnections.opened(conn.principalOf.accountId)
    this.live.set(conn.id, conn)
  }

  /** `conn` is no longer live here (nothing when another transport of its connection took over). */
  private dropLive(conn: Connection) {
    if (this.live.get(conn.id) !== conn) return
    this.live.delete(conn.id)
    this.core.accountConnections.closed(conn.principalOf.accountId)
  }

  private readonly gone = (conn: Connection, abrupt: boolean) => {
    this.dropLive(conn)
    if (abrupt) {
      // a connection that dropped again before its remains were taken: the earlier keepers go
      releaseKeepers(this.remains.get(conn.id))
      this.remains.set(conn.id, {
        memory: conn.acks.handOver(),
        until: this.core.clock.now() + this.s.connectionStateTtlMs,
        key: conn.key,
        appId: conn.principalOf.appId,
        keepers: conn.leftKeepers,
      })
      // bounded: the oldest remains go first
      if (this.remains.size > this.s.realtimeMaxConnections) {
        const oldest = this.remains.keys().next().value!
        releaseKeepers(this.remains.get(oldest))
        this.remains.delete(oldest)
      }
    }
  }

  /** Whether a connection is recorded as over; when that cannot be read, it is not (a resume is let through). */
  private ended(id: string, key: string) {
    return this.core.endedConnections.ended(id, key).catch((e) => {
      this.log.warn('could not read whether a connection ended', { error: String(e) })
      return false
    })
  }

  /** Refuses a connect request: ERROR (fatal for the client), then the transport closes. */
  refuse(transport: Transport, err: GatewayError): void {
    this.log.info('realtime connection refused', { code: err.code, statusCode: err.statusCode, error: err.message })
    transport.send({ action: Action.ERROR, error: err.toBody() })
    transport.close()
  }

  /** An error that is not the gateway's own: logged with its stack, answered as 50000. */
  private unexpected(e: unknown): GatewayError {
    return asGatewayError(e, this.log, { code: 'UNKNOWN' })
  }

  /**
   * Authenticates a connect request, resolves its resume, and opens the connection (CONNECTED)
   * on its transport; undefined when it was refused or the client went away meanwhile.
   */
  async open(params: ConnectParams, transport: Transport): Promise<Connection | undefined> {
    if (this.live.size >= this.s.realtimeMaxConnections) {
      const err = new GatewayError(50003, 'Too many connections on this node; try again later')
      this.log.info('realtime connection refused', { code: err.code, statusCode: err.statusCode, error: err.message })
      transport.send({ action: Action.DISCONNECTED, error: err.toBody() })
      transport.close()
      return undefined
    }
    const { live, remains, core } = this
    let conn: Connection
    let resumeError: GatewayError | undefined
    let resumed = false
    try {
      const creds = params.credentials
      const principal = await core.auth.authenticate(creds)
      // the secret is not kept for the connection's life: re-authentication brings its own token
      creds.key = creds.accessToken = undefined
      let id: string | undefined
      if (params.resumeKey) {
        id = await core.connectionKeys.verify(params.resumeKey, principal)
        if (!id) resumeError = new GatewayError(80018, 'Unable to resume: invalid connection key')
      }
      if (id !== undefined && !live.has(id) && !remains.has(id) && (await this.ended(id, params.resumeKey!))) {
        resumeError = new GatewayError(80008, 'Unable to recover connection: connection expired or closed')
        id = undefined
      }
      resumed = id !== undefined
      if (!resumed && core.accountConnections.bounded) await core.accountConnections.admit(principal.accountId)
      id ??= newConnectionId()
      const key = await core.connectionKeys.issue(id, principal)
      conn = new Connection(core, this.s, this.serverId, transport, params, id, key, principal, this.gone, this.log)
      const before = live.get(id)
      const left = remains.get(id)
      if (before) {
        // the same connection resumed while its old transport looked alive here: the new one takes over
        conn.acks.adopt(before.acks.handOver())
        before.supersede()
        conn.adoptKeepers(before.leftKeepers)
      } else if (left) {
        conn.acks.adopt(left.memory)
        conn.adoptKeepers(left.keepers)
      } else if (resumed) conn.operations.unknownPastUntil = core.clock.now() + UNKNOWN_PAST_MS
      remains.delete(id)
    } catch (e) {
      this.refuse(transport, this.unexpected(e))
      return undefined
    }
    if (!transport.open) return undefined // the client went away while we authenticated
    this.addLive(conn)
    try {
      await conn.start(resumed, resumeError)
    } catch (e) {
      this.dropLive(conn)
      this.refuse(transport, this.unexpected(e))
      return undefined
    }
    if (!transport.open) {
      conn.closedByTransport() // the client left while the connection started
      return undefined
    }
    if (this.log.enabled('debug')) {
      const fields: Record<string, unknown> = {
        connectionId: conn.id,
        appId: conn.principalOf.appId,
        clientId: conn.principalOf.clientId !== undefined,
        resumed,
        format: transport.format,
      }
      if (resumeError) Object.assign(fields, { resumeError: resumeError.code, error: resumeError.message })
      this.log.debug('realtime connected', fields)
    }
    return conn
  }

  /**
   * DISCONNECTED to every client (shutdown): they resume on another node or after the restart.
   * Resolves with their number once each has been answered its publishes in flight and is gone.
   */
  async disconnectAll(): Promise<number> {
    const all = [...this.live.values()]
    await Promise.all(all.map((c) => c.disconnect()))
    return all.length
  }

  close(): void {
    this.stopTimer()
    for (const u of this.untrack) u()
  }
}
