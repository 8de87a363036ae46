import type { Server, ServerWebSocket, WebSocketHandler } from 'bun'
import { hostname } from 'node:os'
import type { Core } from '../../core'
import { newConnectionId } from '../../core/auth/connection-keys'
import { GatewayError } from '../../errors'
import type { Logger } from '../../lib/logger'
import { metrics, trackConnections } from '../../lib/metrics'
import { toGatewayError } from '../plugins/errors'
import type { PublishMemory } from './acks'
import { RealtimeConnection, type ConnectParams, type SocketData } from './connection'
import type { RealtimeLimits } from './settings'
import { encodeFrame, type ClientFrame, type Format } from './frames'
import { Action } from './protocol'

export type { RealtimeLimits, RealtimeSettings } from './settings'

/** How long a connection resumed without its earlier node's publish memory checks publishes against the log (ms). */
const UNKNOWN_PAST_MS = 15_000

/** Frames a socket may send before its connection exists (authentication still running). */
const MAX_EARLY_FRAMES = 100

/** What a dropped connection leaves behind on this node, for a resume within the state TTL. */
interface Remains {
  memory: PublishMemory
  until: number
  /** The key this node issued the connection (over once the state TTL passes here). */
  key: string
  /** The connection's app (its records count against that app's bound). */
  appId: string
}

type Q = Record<string, string | undefined>

const isSecure = () => true
const isPlain = () => false

/** `upgrade` took the request: the socket is the client's now (fetch must return nothing). */
export const UPGRADED = Symbol('upgraded')

/** The `remainPresentFor` transport param (ms): at least 1 s; undefined when absent or not a number. */
function remainPresentFor(v: string | undefined): number | undefined {
  const n = v === undefined ? NaN : Number(v)
  return Number.isFinite(n) && n >= 0 ? Math.max(1000, Math.min(n, 600_000)) : undefined
}

const flag = (v: string | undefined, def: boolean) => (v === undefined || v === '' ? def : v === 'true' || v === '1')

/**
 * The realtime protocol's transport: WebSocket on the root path of the same port (Bun's native
 * WebSocket server). `upgrade` takes the HTTP request; `websocket` are the socket handlers to
 * give `Bun.serve`. Refusals are ERROR frames after the upgrade, never HTTP errors (a client that
 * cannot upgrade retries forever instead of failing).
 */
export function realtime(core: Core, s: RealtimeLimits, log: Logger) {
  const serverId = `${hostname()}-${process.pid}`
  const live = new Map<string, RealtimeConnection>()
  const remains = new Map<string, Remains>()
  const untrack = [
    trackConnections('realtime', () => live.size),
    metrics.gauge('gateway_realtime_attachments', 'Attached channels of realtime connections on this node.', () => {
      let n = 0
      for (const c of live.values()) n += c.channels.size
      return n
    }),
    metrics.gauge(
      'gateway_presence_members',
      'Presence members entered over the realtime connections open on this node.',
      () => {
        let n = 0
        for (const c of live.values()) n += c.presence.members
        return n
      },
    ),
  ]

  const timer = setInterval(
    () => {
      const now = Date.now()
      for (const c of live.values()) c.heartbeat(now)
      for (const [id, r] of remains) if (r.until < now) expire(id, r)
    },
    Math.max(100, Math.floor(s.realtimeMaxIdleIntervalMs / 4)),
  )
  timer.unref?.()

  /** A dropped connection not resumed here within the state TTL: the key it has from here is over on every node. */
  const expire = (id: string, r: Remains) => {
    remains.delete(id)
    core.endedConnections
      .expired(r.key, r.appId)
      .catch((e) => log.warn('could not record an expired connection', { error: String(e) }))
  }

  const gone = (conn: RealtimeConnection, abrupt: boolean) => {
    if (live.get(conn.id) === conn) live.delete(conn.id)
    if (abrupt) {
      remains.set(conn.id, {
        memory: conn.acks.handOver(),
        until: Date.now() + s.connectionStateTtlMs,
        key: conn.key,
        appId: conn.principalOf.appId,
      })
      // bounded: the oldest remains go first
      if (remains.size > s.realtimeMaxConnections) remains.delete(remains.keys().next().value!)
    }
  }

  function params(url: URL, request: Request): ConnectParams {
    const q: Q = Object.fromEntries(url.searchParams)
    const secure = url.protocol === 'https:' || request.headers.get('x-forwarded-proto') === 'https'
    const format: Format = q.format === 'msgpack' ? 'msgpack' : 'json'
    return {
      format,
      heartbeats: flag(q.heartbeats, false),
      echo: flag(q.echo, true),
      resumeKey: q.resume || q.recover || undefined,
      remainPresentForMs: remainPresentFor(q.remainPresentFor),
      credentials: {
        key: q.key,
        accessToken: q.access_token ?? q.accessToken,
        clientId: q.clientId || undefined,
        // decided now: the connection keeps its credentials (re-auth), never the upgrade request
        secure: secure ? isSecure : isPlain,
      },
    }
  }

  /** Whether a connection is recorded as over; when that cannot be read, it is not (a resume is let through). */
  const ended = (id: string, key: string) =>
    core.endedConnections.ended(id, key).catch((e) => {
      log.warn('could not read whether a connection ended', { error: String(e) })
      return false
    })

  /** Authenticates, resolves a resume, and opens the connection (CONNECTED) on an upgraded socket. */
  async function open(ws: ServerWebSocket<SocketData>) {
    const data = ws.data
    const refuse = (err: GatewayError) => {
      log.info('realtime connection refused', { code: err.code, statusCode: err.statusCode, error: err.message })
      ws.send(encodeFrame({ action: Action.ERROR, error: err.toBody() }, data.params.format))
      ws.close(1000)
    }
    if (data.refusal) return refuse(data.refusal)
    if (live.size >= s.realtimeMaxConnections) {
      const err = new GatewayError(50003, 'Too many connections on this node; try again later', { status: 503 })
      log.info('realtime connection refused', { code: err.code, statusCode: err.statusCode, error: err.message })
      ws.send(encodeFrame({ action: Action.DISCONNECTED, error: err.toBody() }, data.params.format))
      return ws.close(1000)
    }
    let conn: RealtimeConnection
    let resumeError: GatewayError | undefined
    let resumed = false
    try {
      const creds = data.params.credentials
      const principal = await core.auth.authenticate(creds)
      // the secret is not kept for the connection's life: re-authentication brings its own token
      creds.key = creds.accessToken = undefined
      let id: string | undefined
      if (data.params.resumeKey) {
        id = await core.connectionKeys.verify(data.params.resumeKey, principal)
        if (!id) resumeError = new GatewayError(80018, 'Unable to resume: invalid connection key')
      }
      if (id !== undefined && !live.has(id) && !remains.has(id) && (await ended(id, data.params.resumeKey!))) {
        resumeError = new GatewayError(80008, 'Unable to recover connection: connection expired or closed')
        id = undefined
      }
      resumed = id !== undefined
      id ??= newConnectionId()
      const key = await core.connectionKeys.issue(id, principal)
      conn = new RealtimeConnection(core, s, serverId, ws, id, key, principal, gone, log)
      const before = live.get(id)
      const left = remains.get(id)
      if (before) {
        // the same connection resumed while its old socket looked alive here: the new one takes over
        conn.acks.adopt(before.acks.handOver())
        before.supersede()
      } else if (left) conn.acks.adopt(left.memory)
      else if (resumed) conn.publishes.unknownPastUntil = Date.now() + UNKNOWN_PAST_MS
      remains.delete(id)
    } catch (e) {
      return refuse(toGatewayError('UNKNOWN', e, log))
    }
    if (ws.readyState !== 1) return // the client went away while we authenticated
    live.set(conn.id, conn)
    try {
      await conn.start(resumed, resumeError)
    } catch (e) {
      live.delete(conn.id)
      return refuse(toGatewayError('UNKNOWN', e, log))
    }
    if (ws.readyState !== 1) return conn.closedBySocket() // the client left while the connection started
    data.conn = conn
    if (log.enabled('debug')) {
      const fields: Record<string, unknown> = {
        connectionId: conn.id,
        appId: conn.principalOf.appId,
        clientId: conn.principalOf.clientId !== undefined,
        resumed,
        format: data.params.format,
      }
      if (resumeError) Object.assign(fields, { resumeError: resumeError.code, error: resumeError.message })
      log.debug('realtime connected', fields)
    }
    const early = data.early ?? []
    data.early = undefined
    for (const frame of early) conn.receive(frame)
  }

  const websocket: WebSocketHandler<SocketData> = {
    maxPayloadLength: s.realtimeMaxFrameSize * 2,
    // pings keep idle sockets alive; a peer that answers nothing for this long is gone
    idleTimeout: Math.min(960, Math.max(8, Math.ceil((s.realtimeMaxIdleIntervalMs * 2) / 1000))),
    sendPings: true,
    // no limit of the runtime's: past one it drops frames silently (a delivery lost, or an ACK). The
    // bounds are the connection's: deliveries pause over REALTIME_BUFFER_BYTES, answers are capped
    backpressureLimit: 0,
    open(ws) {
      // binary frames as ArrayBuffers: a Buffer's ArrayBuffer object is made on first use, which
      // decoding needs (~0.1 µs a frame)
      ws.binaryType = 'arraybuffer'
      void open(ws)
    },
    message(ws, message) {
      const frame = message as ClientFrame
      const conn = ws.data.conn
      if (conn) return conn.receive(frame)
      const early = (ws.data.early ??= [])
      if (early.length >= MAX_EARLY_FRAMES) return ws.close(1008, 'too many frames before CONNECTED')
      early.push(frame)
    },
    drain(ws) {
      ws.data.conn?.drained()
    },
    close(ws, code) {
      ws.data.conn?.closedBySocket(code)
    },
  }

  return {
    websocket,
    /**
     * Upgrades a realtime connect request (`GET /` with `Upgrade: websocket`): UPGRADED, or an
     * error response when the upgrade failed; undefined when the request is not one (it goes on to
     * the HTTP routes).
     */
    upgrade(request: Request, server: Server<SocketData>): typeof UPGRADED | Response | undefined {
      const url = new URL(request.url)
      if (url.pathname !== '/' || request.headers.get('upgrade')?.toLowerCase() !== 'websocket') return undefined
      const p = params(url, request)
      const data: SocketData = { params: p }
      if (url.searchParams.get('format') && !['json', 'msgpack'].includes(url.searchParams.get('format')!))
        data.refusal = new GatewayError(40003, 'Invalid format param: json or msgpack')
      if (server.upgrade(request, { data })) return UPGRADED
      return new Response(JSON.stringify({ error: new GatewayError(40000, 'WebSocket upgrade failed').toBody() }), {
        status: 400,
        headers: { 'content-type': 'application/json' },
      })
    },
    /** Open connections on this node. */
    get size() {
      return live.size
    },
    /** A connection by id (tests, operations). */
    connection(id: string): RealtimeConnection | undefined {
      return live.get(id)
    },
    /**
     * DISCONNECTED to every client (shutdown): they resume on another node or after the restart.
     * Resolves with their number once each has been answered its publishes in flight and is gone.
     */
    async disconnectAll(): Promise<number> {
      const all = [...live.values()]
      await Promise.all(all.map((c) => c.disconnect()))
      return all.length
    },
    close() {
      clearInterval(timer)
      for (const u of untrack) u()
    },
  }
}

export type Realtime = ReturnType<typeof realtime>
