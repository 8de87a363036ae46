import type { Server, WebSocketHandler } from 'bun'
import type { Logger } from '../../lib/logger'
import type { ClientFrame, Format } from '../realtime/frames'
import type { SocketData } from '../realtime/socket'
import { FaultSocket } from './fault-socket'
import type { RuleAction } from './rules'
import type { Session } from './session'

/** What a session's port serves: the node's own handlers (server.ts gatewayHandlers). */
export interface PortHandlers {
  fetch(req: Request, server: Server<SocketData>, tap?: FaultSocket): Response | Promise<Response> | undefined
  websocket: WebSocketHandler<SocketData>
}

export interface PortSettings {
  hostname: string
  idleTimeoutSeconds: number
  maxRequestBodySize: number
  /** What a request that threw outside every handler gets (server.ts internalError). */
  error: (e: unknown) => Response
}

/** The request headers the log keeps (those of the hosted tooling's log). */
const LOGGED_HEADERS = ['Authorization', 'Content-Type', 'Accept', 'X-Ably-Version', 'X-Ably-Lib']

/** An answer that never comes: the connection is cut before a byte of a response (`http_drop`). */
const dropped = () =>
  new Response(
    new ReadableStream({
      pull(c) {
        c.error(undefined)
      },
    }),
  )

function ruleResponse(a: RuleAction): Response {
  const headers = new Headers(a.headers)
  if (!headers.has('content-type')) headers.set('content-type', 'application/json')
  const body = a.body === undefined ? null : JSON.stringify(a.body)
  return new Response(body, { status: a.status ?? 200, headers })
}

/** Discards an answer the client will not get (its body read to the end, or a stream cancelled). */
function discard(res: Response): void {
  res.body?.cancel().catch(() => {})
}

/**
 * Listens on the session's port and serves the node's handlers there: HTTP requests pass the
 * session's `http_request` rules, WebSocket connects its `ws_connect` rules, and the frames of
 * each socket its frame rules (FaultSocket). Throws when the port cannot be bound.
 */
export function listenSession(
  session: Session<FaultSocket>,
  port: number,
  h: PortHandlers,
  s: PortSettings,
  log: Logger,
): Server<SocketData> {
  const tapOf = (ws: { data: SocketData }) => ws.data.tap as FaultSocket
  const websocket: WebSocketHandler<SocketData> = {
    ...h.websocket,
    // the runtime's own pings would reach a client whose frames a rule suppresses: only the
    // connection's (FaultTransport.ping, which such a rule stops) go out
    sendPings: false,
    open(ws) {
      const socket = tapOf(ws)
      session.socketOpened(socket)
      // the node's handler takes text, or binary as the ArrayBuffer its `open` asks the socket for
      const forward = h.websocket.message as (w: typeof ws, frame: ClientFrame) => void
      socket.opened(ws, (frame) => forward(ws, frame))
      if (!socket.ended) return h.websocket.open?.(ws)
    },
    message(ws, message) {
      tapOf(ws).fromClient(message as ClientFrame)
    },
    close(ws, code, reason) {
      tapOf(ws).closed(code)
      return h.websocket.close?.(ws, code, reason)
    },
  }

  function upgrade(req: Request, server: Server<SocketData>, url: URL): Response | undefined {
    const query: Record<string, string> = {}
    for (const [k, v] of url.searchParams) if (!(k in query)) query[k] = v
    const number = ++session.wsConnects
    session.log.add({
      type: 'ws_connect',
      url: `ws://${req.headers.get('host') ?? ''}${url.pathname}${url.search}`,
      queryParams: query,
    })
    const hit = session.findRule({ type: 'ws_connect', query })
    let closeOnOpen: { code: number; label: string } | undefined
    if (hit) {
      session.fire(hit.rule)
      if (hit.rule.action.type === 'refuse_connection') {
        session.log.add({ type: 'ws_disconnect', initiator: 'proxy', ruleMatched: hit.label })
        return new Response('connection refused by proxy rule\n', {
          status: 502,
          headers: { 'content-type': 'text/plain; charset=utf-8' },
        })
      }
      if (hit.rule.action.type === 'accept_and_close')
        closeOnOpen = { code: hit.rule.action.closeCode ?? 1000, label: hit.label }
    }
    const format: Format = query.format === 'msgpack' ? 'msgpack' : 'json'
    return h.fetch(req, server, new FaultSocket(session, format, number, closeOnOpen)) as Response | undefined
  }

  async function http(req: Request, server: Server<SocketData>, url: URL): Promise<Response> {
    const headers: Record<string, string> = {}
    for (const name of LOGGED_HEADERS) {
      const v = req.headers.get(name)
      if (v) headers[name] = v
    }
    session.log.add({
      type: 'http_request',
      direction: 'client_to_server',
      method: req.method,
      path: url.pathname,
      headers,
    })
    const hit = session.findRule({ type: 'http_request', method: req.method, path: url.pathname })
    const label = hit?.label ?? null
    const answer = (res: Response) => {
      session.log.add({ type: 'http_response', direction: 'server_to_client', status: res.status, ruleMatched: label })
      return res
    }
    if (hit) {
      session.fire(hit.rule)
      const a = hit.rule.action
      switch (a.type) {
        case 'http_respond':
          return answer(ruleResponse(a))
        case 'http_drop':
          session.log.add({ type: 'http_response', direction: 'server_to_client', status: 0, ruleMatched: label })
          return dropped()
        case 'http_delay':
          // the runtime's idle timeout would cut a request held past it
          server.timeout(req, 0)
          if (!(await held(a.delayMs ?? 0))) return dropped()
          break
        case 'http_replace_response':
          discard(await h.fetch(req, server)!)
          return answer(ruleResponse(a))
      }
    }
    return answer(await h.fetch(req, server)!)
  }

  /** Waits `ms`; false when the session ended meanwhile. */
  function held(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const drop = () => {
        clearTimeout(t)
        resolve(false)
      }
      const t = setTimeout(() => {
        session.held.delete(drop)
        resolve(!session.closed)
      }, ms)
      session.held.add(drop)
    })
  }

  return Bun.serve<SocketData>({
    port,
    hostname: s.hostname,
    idleTimeout: s.idleTimeoutSeconds,
    maxRequestBodySize: s.maxRequestBodySize,
    // explicit: with development off the runtime would share a taken port (SO_REUSEPORT) instead of failing
    reusePort: false,
    development: false,
    error: s.error,
    websocket,
    fetch(req, server) {
      session.touch()
      const url = new URL(req.url)
      if (url.pathname === '/' && req.headers.get('upgrade')?.toLowerCase() === 'websocket') {
        const r = upgrade(req, server, url)
        if (r) return r
        return undefined
      }
      return http(req, server, url).catch((e) => {
        log.warn('fault session request failed', {
          session: session.id,
          error: e instanceof Error ? e.message : String(e),
        })
        return s.error(e)
      })
    },
  })
}
