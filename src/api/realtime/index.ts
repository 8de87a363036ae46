import type { Server, ServerWebSocket, WebSocketHandler } from 'bun'
import { hostname } from 'node:os'
import {
  appendRollupWindowParam,
  ConnectionRegistry,
  type ConnectionServices,
  type ConnectParams,
  type ProtocolMessage,
  type RealtimeLimits,
} from '../../core/connections'
import { asGatewayError, GatewayError } from '../../errors'
import type { Logger } from '../../lib/logger'
import type { BodyLimits } from '../http/body'
import type { CorsPolicy } from '../http/cors'
import { toGatewayError } from '../http/errors'
import { checkQueryEncoding } from '../http/params'
import { queryOf } from '../http/query'
import { respondError } from '../http/responses'
import { decodeFrame, type ClientFrame, type Format } from './frames'
import { cometRoutes, unknown, type CometRequestOptions } from './comet'
import { cometHandover, type CometHandover } from './comet-handover'
import { SocketTransport, type SocketData, type SocketTap } from './socket'

export type { RealtimeLimits, RealtimeSettings } from '../../core/connections'
export type { SocketData, SocketTap } from './socket'

/** Frames a socket may send before its connection exists (authentication still running). */
const MAX_EARLY_FRAMES = 100

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
 * A client frame for its connection: too large or not a protocol message fails the connection
 * (40009, 40000); else the connection receives it.
 */
export function receiveFrame(
  conn: { receiving: boolean; fail(err: GatewayError): void; receive(pm: ProtocolMessage): void },
  raw: ClientFrame,
  format: Format,
  maxFrameSize: number,
): void {
  if (!conn.receiving) return
  const size = typeof raw === 'string' ? Buffer.byteLength(raw) : raw.byteLength
  if (size > maxFrameSize)
    return conn.fail(new GatewayError(40009, `Frame too large (${size} bytes; the limit is ${maxFrameSize})`))
  let pm: ProtocolMessage
  try {
    pm = decodeFrame(raw, format)
  } catch (e) {
    return conn.fail(asGatewayError(e))
  }
  conn.receive(pm)
}

/** The connect parameters of a realtime connect request's query (WebSocket upgrade, comet connect). */
export function connectParams(url: URL, request: Request): ConnectParams & { format: Format } {
  const q: Q = Object.fromEntries(url.searchParams)
  const secure = url.protocol === 'https:' || request.headers.get('x-forwarded-proto') === 'https'
  const format: Format = q.format === 'msgpack' ? 'msgpack' : 'json'
  return {
    format,
    heartbeats: flag(q.heartbeats, false),
    echo: flag(q.echo, true),
    resumeKey: q.resume || q.recover || undefined,
    remainPresentForMs: remainPresentFor(q.remainPresentFor),
    appendRollupWindowMs: appendRollupWindowParam(q.appendRollupWindow),
    credentials: {
      key: q.key,
      accessToken: q.access_token ?? q.accessToken,
      clientId: q.clientId || undefined,
      // decided now: the connection keeps its credentials (re-auth), never the upgrade request
      secure: secure ? isSecure : isPlain,
    },
  }
}

/**
 * Why a connect request's query is refused: a malformed escape (the rule of every route, 40003 or
 * 40010), or a `format` that names neither format (40003); undefined when it is not.
 */
export function queryRefusal(request: Request, url: URL): GatewayError | undefined {
  try {
    checkQueryEncoding(request.url)
  } catch (e) {
    return asGatewayError(e)
  }
  const f = url.searchParams.get('format')
  return f && f !== 'json' && f !== 'msgpack'
    ? new GatewayError(40003, 'Invalid format param: json or msgpack')
    : undefined
}

/** What the realtime transports need to know of the node's settings. */
export interface RealtimeServerSettings extends RealtimeLimits, BodyLimits {
  /** SIBLING_SOCKET_DIR: where the processes of this node hand each other comet requests ('' : none). */
  siblingSocketDir: string
}

/**
 * The realtime protocol's WebSocket transport on the root path of the same port (Bun's native
 * WebSocket server), an adapter of the connections in core (core/connections): `upgrade` takes
 * the HTTP request; `websocket` are the socket handlers to give `Bun.serve`. Refusals are ERROR
 * frames after the upgrade, never HTTP errors (a client that cannot upgrade retries forever
 * instead of failing).
 */
export function realtime(core: ConnectionServices, s: RealtimeServerSettings, log: Logger) {
  const registry = new ConnectionRegistry(core, s, `${hostname()}-${process.pid}`, log)
  const pollMs = Math.max(1000, Math.floor(s.realtimeMaxIdleIntervalMs / 2))
  const comet = cometRoutes(
    registry,
    {
      sendLimits: {
        maxBodySize: s.realtimeMaxFrameSize * 2,
        maxNestingDepth: s.maxNestingDepth,
        requestBodyTimeoutMs: s.requestBodyTimeoutMs,
      },
      pollMs,
      goneAfterMs: Math.max(5000, s.realtimeMaxIdleIntervalMs),
      receive: (conn, raw) => receiveFrame(conn, raw, 'json', s.realtimeMaxFrameSize),
    },
    (url, request) => {
      // comet is JSON only (the client sends no format)
      const { format: _format, ...params } = connectParams(url, request)
      return { params }
    },
  )

  /** A comet request's answer; anything thrown is answered in the spec's error shape, never left to the runtime. */
  function serveComet(request: Request, url: URL, o: CometRequestOptions): Response | Promise<Response> | undefined {
    const failed = (e: unknown) => respondError(request, queryOf(request), toGatewayError('UNKNOWN', e, log, request))
    try {
      const res = comet.handle(request, url, o)
      return res instanceof Promise ? res.catch(failed) : res
    } catch (e) {
      return failed(e)
    }
  }

  // the processes of a node hand each other the comet requests of the connections they hold
  const handover: CometHandover | undefined = s.siblingSocketDir
    ? cometHandover(
        s.siblingSocketDir,
        core.connectionKeys.node,
        pollMs + s.requestBodyTimeoutMs + 5000,
        (request, server) => {
          const url = new URL(request.url)
          const o = { hold: () => server.timeout(request, 0) }
          return serveComet(request, url, o) ?? unknown()
        },
        unknown,
        log,
      )
    : undefined
  const elsewhere = handover && ((key: string, request: Request) => handover.forward(key, request))

  /** Opens the connection on an upgraded socket, then serves the frames that came meanwhile. */
  async function open(ws: ServerWebSocket<SocketData>) {
    const data = ws.data
    const transport = data.tap ? data.tap.transport(ws, data.format) : new SocketTransport(ws, data.format)
    if (data.refusal) return registry.refuse(transport, data.refusal)
    const conn = await registry.open(data.params, transport)
    if (!conn) return
    data.conn = conn
    const early = data.early ?? []
    data.early = undefined
    for (const frame of early) receiveFrame(conn, frame, data.format, s.realtimeMaxFrameSize)
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
      if (conn) return receiveFrame(conn, frame, ws.data.format, s.realtimeMaxFrameSize)
      const early = (ws.data.early ??= [])
      if (early.length >= MAX_EARLY_FRAMES) return ws.close(1008, 'too many frames before CONNECTED')
      early.push(frame)
    },
    drain(ws) {
      ws.data.conn?.drained()
    },
    close(ws, code) {
      ws.data.conn?.closedByTransport(String(code))
    },
  }

  return {
    websocket,
    /** The node's realtime connections, whatever their transport (comet adds its own). */
    registry,
    /**
     * Upgrades a realtime connect request (`GET /` with `Upgrade: websocket`): UPGRADED, or an
     * error response when the upgrade failed; undefined when the request is not one (it goes on to
     * the HTTP routes). `tap`: the fault session of the port (its socket's transport).
     */
    upgrade(request: Request, server: Server<SocketData>, tap?: SocketTap): typeof UPGRADED | Response | undefined {
      const url = new URL(request.url)
      if (url.pathname !== '/' || request.headers.get('upgrade')?.toLowerCase() !== 'websocket') return undefined
      const { format, ...params } = connectParams(url, request)
      const data: SocketData = { params, format, refusal: queryRefusal(request, url), tap }
      if (server.upgrade(request, { data })) return UPGRADED
      return new Response(JSON.stringify({ error: new GatewayError(40000, 'WebSocket upgrade failed').toBody() }), {
        status: 400,
        headers: { 'content-type': 'application/json' },
      })
    },
    /**
     * A comet request (`/comet/connect`, `/comet/<connectionKey>/send|recv|close|disconnect`): its
     * response; undefined when the request is not one (it goes on to the HTTP routes). A long
     * poll is exempted from the server's idle timeout.
     */
    comet(
      request: Request,
      cors: CorsPolicy,
      server: Pick<Server<unknown>, 'timeout'>,
    ): Response | Promise<Response> | undefined {
      if (request.url.indexOf('/comet/') < 0) return undefined
      const url = new URL(request.url)
      if (!url.pathname.startsWith('/comet/')) return undefined
      // browsers (xhr_polling) call from the web app's origin: CORS as on the REST routes
      if (request.method === 'OPTIONS') return cors.preflight(request)
      const res = serveComet(request, url, { hold: () => server.timeout(request, 0), elsewhere })
      if (!res || !request.headers.has('origin')) return res
      const withCors = (r: Response) => {
        const headers: Record<string, string> = {}
        cors.apply(request, headers)
        for (const k in headers) r.headers.set(k, headers[k]!)
        return r
      }
      return res instanceof Promise ? res.then(withCors) : withCors(res)
    },
    /** Open connections on this node. */
    get size() {
      return registry.size
    },
    /** A connection by id (tests, operations). */
    connection(id: string) {
      return registry.connection(id)
    },
    /**
     * DISCONNECTED to every client (shutdown): they resume on another node or after the restart.
     * Resolves with their number once each has been answered its publishes in flight and is gone.
     */
    disconnectAll(): Promise<number> {
      return registry.disconnectAll()
    },
    close() {
      handover?.close()
      comet.close()
      registry.close()
    },
  }
}

export type Realtime = ReturnType<typeof realtime>
