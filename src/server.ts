import type { Server } from 'bun'
import { Elysia, type AnyElysia } from 'elysia'
import type { Core } from './core'
import { asGatewayError, GatewayError } from './errors'
import type { Logger } from './lib/logger'
import { channelRoutes } from './api/channels'
import { chatRoutes } from './api/chat'
import { controlRoutes } from './api/control'
import { integrationRoutes } from './api/control/integrations'
import { sandboxRoutes } from './api/control/sandbox'
import { publishHandler, publishRoute, PUBLISH_ROUTE } from './api/channels/publish-endpoint'
import { healthRoutes } from './api/health'
import { openapiRoutes } from './api/openapi'
import { consoleRoutes } from './api/console'
import { objectRoutes } from './api/objects'
import { channelObjectRoutes } from './api/objects/channel-objects'
import { pushRoutes } from './api/push'
import { bodyParser, checkDeclaredLength, type BodyLimits } from './api/http/body'
import { CorsPolicy, useCors } from './api/http/cors'
import { errorsPlugin } from './api/plugins/errors'
import { bodyValidation, type RouteEntry } from './api/plugins/validation'
import { decodeParams } from './api/http/params'
import { observability } from './api/plugins/observability'
import type { AddressOf } from './api/http/access-log'
import { isLongLived } from './api/http/long-lived'
import { sseRoutes, type SseSettings } from './api/sse'
import { realtime, UPGRADED, type Realtime, type RealtimeLimits } from './api/realtime'
import type { SocketData, SocketTap } from './api/realtime/socket'
import { connectionRate } from './api/http/connection-rate'

export interface ServerSettings extends SseSettings, BodyLimits, RealtimeLimits {
  sandboxProvisioning: boolean
  /** Serve the web console at /console (CONSOLE). */
  webConsole: boolean
  logLevel: string
  tlsCertFile: string
  tlsKeyFile: string
  /** HTTP/2 by ALPN on the TLS listener (HTTP2). */
  http2: boolean
  /** Requests one connection may make per second on the HTTP/2 listener (HTTP2_MAX_REQUESTS_PER_SECOND). */
  http2MaxRequestsPerSecond: number
  /** HTTP/3 (QUIC) beside the TLS listener (HTTP3). */
  http3: boolean
  idleConnectionTimeoutMs: number
  corsOrigins: string[]
  reusePort: boolean
  /** SIBLING_SOCKET_DIR: where the processes of this node hand each other comet requests. */
  siblingSocketDir: string
}

/** What the node tells the app about itself: `ready` is false until the node is bootstrapped. */
export interface NodeState {
  ready: () => boolean
  /** The client address of a request (from the listening server; undefined in-process). */
  addressOf: AddressOf
}

/** Builds the Elysia app of one node from the core. Never listens: tests call `app.handle`. */
export function buildApp(
  core: Core,
  s: ServerSettings,
  log: Logger,
  node: NodeState = { ready: () => true, addressOf: () => undefined },
) {
  const corsPolicy = new CorsPolicy(s.corsOrigins)
  // the publish route reads its own body (the same handler serves Bun's router)
  const parse = bodyParser(s, (method, route) => method === 'POST' && route === PUBLISH_ROUTE)
  let routes: () => readonly RouteEntry[] = () => []
  let root: AnyElysia | undefined // the document is built from the whole app, on first request
  const app = new Elysia({ name: 'gateway', normalize: false })
    .use(errorsPlugin(log))
    // before every route (the metrics route of observability too): one decoding rule for all
    .onTransform({ as: 'global' }, decodeParams)
    .use(observability(core, log, node.addressOf))
    .onRequest(({ request }) => {
      useCors(request, corsPolicy)
      if (request.method === 'OPTIONS') {
        if (!corsPolicy.allows(request.headers.get('origin')))
          throw new GatewayError(40300, 'Origin not allowed by this server (CORS_ORIGINS)')
        return corsPolicy.preflight(request)
      }
      checkDeclaredLength(request, s.maxBodySize)
    })
    .onParse({ as: 'global' }, ({ request, contentType, route }) => parse(request, contentType, route))
    .use(bodyValidation(() => routes()))
    .use(openapiRoutes(() => root!))
    .use(consoleRoutes(s.webConsole))
    .use(healthRoutes(core, node.ready))
    .use(channelRoutes(core, publishHandler(core, s, log)))
    .use(sseRoutes(core, s))
    .use(controlRoutes(core))
    .use(integrationRoutes(core))
    .use(sandboxRoutes(core, s.sandboxProvisioning))
    .use(objectRoutes(core))
    .use(channelObjectRoutes(core))
    .use(chatRoutes(core))
    .use(pushRoutes(core))
  routes = () => app.routes as readonly RouteEntry[]
  root = app
  return app
}

export type App = ReturnType<typeof buildApp>

export interface ListenOptions {
  port: number
  hostname: string
}

/** The listening server of a node, with its realtime transport (shutdown disconnects its clients). */
export type GatewayServer = Server<SocketData> & { realtime: Realtime; handlers: GatewayHandlers }

/**
 * Bun's own body limit, a backstop above ours: a declared length up to twice MAX_BODY_SIZE gets our
 * 413 (checked before anything is read) and a chunked body is refused by our count as it passes
 * MAX_BODY_SIZE. Bun answers beyond it alone, with a bare 413 (see docs/security.md).
 */
export const runtimeBodyLimit = (maxBodySize: number) => 2 * maxBodySize

/**
 * What a request that threw outside every handler's own error handling gets (a backstop: each
 * surface answers its errors itself): 500 / 50000 in the spec's shape, the error logged.
 */
export function internalError(e: unknown, log: Logger): Response {
  const err = asGatewayError(e, log, { where: 'server' })
  return new Response(JSON.stringify({ error: err.toBody() }), {
    status: err.statusCode,
    headers: {
      'content-type': 'application/json',
      'x-ably-errorcode': String(err.code),
      'x-ably-errormessage': err.message,
    },
  })
}

/**
 * The handlers of a listening port of this node: WebSocket upgrades on `/` go to the realtime
 * transport, comet requests to the realtime transport, everything else through Elysia (Bun's
 * native router takes every publish on the main port: `publish`, the handler the Elysia route
 * calls too). A long-lived answer (event stream, comet long poll) is exempted from the server's
 * idle timeout. A fault session's port (api/faults) serves the same handlers with its tap on the
 * sockets it upgrades; the main port passes none.
 */
export function gatewayHandlers(app: App, core: Core, s: ServerSettings, log: Logger) {
  const rt = realtime(core, s, log)
  const corsPolicy = new CorsPolicy(s.corsOrigins)
  const exempt = (res: Response, req: Request, server: Server<SocketData>) => {
    if (isLongLived(res)) server.timeout(req, 0)
    return res
  }
  const http = (req: Request, server: Server<SocketData>) => {
    // Elysia finds the path at index >= 11 of the URL: a very short Host (`Host: gw`) would lose it
    const slash = req.url.indexOf('/', req.url.indexOf('//') + 2)
    const res = app.fetch(slash >= 11 ? req : new Request('http://localhost' + req.url.slice(slash), req))
    return res instanceof Promise ? res.then((r) => exempt(r, req, server)) : exempt(res, req, server)
  }
  const fetch = (req: Request, server: Server<SocketData>, tap?: SocketTap) => {
    if (req.headers.has('upgrade')) {
      const r = rt.upgrade(req, server, tap)
      if (r === UPGRADED) return undefined
      if (r) return r
    }
    return rt.comet(req, corsPolicy, server) ?? http(req, server)
  }
  return {
    realtime: rt,
    fetch,
    websocket: rt.websocket,
    publish: publishRoute(publishHandler(core, s, log), corsPolicy, log),
  }
}

export type GatewayHandlers = ReturnType<typeof gatewayHandlers>

/**
 * Serves the app on one port (see gatewayHandlers). Connections idle (between requests) for
 * IDLE_CONNECTION_TIMEOUT_MS are closed by Bun, which also cuts a request whose body has not fully
 * arrived by then; event streams, open for as long as their client stays, and comet long polls are
 * exempt from it (WebSockets have their own idle handling).
 */
export function serve(app: App, core: Core, s: ServerSettings, log: Logger, o: ListenOptions): GatewayServer {
  const h = gatewayHandlers(app, core, s, log)
  const h2 = s.http2 && !!s.tlsCertFile
  // on the HTTP/2 listener only: a connection's requests per second are bounded before any work
  const over = h2 ? connectionRate<SocketData>(s.http2MaxRequestsPerSecond) : undefined
  const server = Bun.serve<SocketData>({
    port: o.port,
    hostname: o.hostname,
    reusePort: s.reusePort,
    idleTimeout: Math.ceil(s.idleConnectionTimeoutMs / 1000),
    maxRequestBodySize: runtimeBodyLimit(s.maxBodySize),
    tls: s.tlsCertFile ? { cert: Bun.file(s.tlsCertFile), key: Bun.file(s.tlsKeyFile) } : undefined,
    // h2 only where ALPN offers it: without TLS Bun would also take cleartext prior-knowledge HTTP/2
    http2: h2,
    http3: s.http3 && !!s.tlsCertFile,
    routes: {
      [PUBLISH_ROUTE]: {
        POST: over
          ? (req: Parameters<typeof h.publish>[0], server: Server<SocketData>) =>
              over(req, server) ?? h.publish(req, server)
          : h.publish,
      },
    },
    fetch: over ? (req, server) => over(req, server) ?? h.fetch(req, server) : (req, server) => h.fetch(req, server),
    // never the runtime's development error page (stack, paths, source lines): the spec's 500
    development: false,
    error: (e) => internalError(e, log),
    websocket: h.websocket,
  }) as GatewayServer
  server.realtime = h.realtime
  server.handlers = h
  return server
}
