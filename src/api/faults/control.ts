import type { Server } from 'bun'
import { randomBytes } from 'node:crypto'
import { asGatewayError, GatewayError } from '../../errors'
import type { Logger } from '../../lib/logger'
import { parseJson, readBody } from '../http/body'
import type { FaultEvent } from './event-log'
import { listenSession, type PortHandlers, type PortSettings } from './session-port'
import { IMPERATIVE_ACTIONS, parseAction, parseRules } from './rules'
import type { FaultSocket } from './fault-socket'
import { Session, type SessionLimits } from './session'

/** The settings of the fault control API (FAULTS_*). */
export interface FaultSettings {
  faultsHost: string
  faultsPort: number
  faultsMaxSessions: number
  faultsMaxRules: number
  faultsMaxLogEvents: number
  faultsMaxLogBytes: number
}

/** A session's idle timeout when the request gives none (the hosted tooling's), and the longest one may ask. */
const DEFAULT_TIMEOUT_MS = 30_000
const MAX_TIMEOUT_MS = 3_600_000
/** Largest control request body: a session's rules with their messages. */
const MAX_CONTROL_BODY = 1 << 20

const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } })

/** An error in the gateway's error shape (the hosted tooling answers a bare string; clients read the status). */
const failure = (e: GatewayError) => json(e.statusCode, { error: e.toBody() })

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v)

/**
 * The fault control API: the control grammar of the hosted service's test proxy (uts-proxy
 * docs/API.md), served by the gateway itself. Each session listens on a port of its own and serves
 * the node there (REST, realtime, comet, event stream) with the session's rules applied to that
 * port's traffic only; the node's own port and other sessions never pass through them.
 */
export class FaultControl {
  private readonly sessions = new Map<string, Session<FaultSocket>>()
  server?: Server<undefined>

  constructor(
    private readonly s: FaultSettings,
    private readonly handlers: PortHandlers,
    private readonly port: PortSettings,
    private readonly log: Logger,
  ) {}

  get url(): string {
    const host = this.s.faultsHost.includes(':') ? `[${this.s.faultsHost}]` : this.s.faultsHost
    return `http://${host}:${this.server?.port ?? this.s.faultsPort}`
  }

  get size(): number {
    return this.sessions.size
  }

  listen(): this {
    this.server = Bun.serve({
      port: this.s.faultsPort,
      hostname: this.s.faultsHost,
      // explicit: with development off the runtime would share a taken port (SO_REUSEPORT) instead of failing
      reusePort: false,
      development: false,
      maxRequestBodySize: 2 * MAX_CONTROL_BODY,
      error: (e) => failure(asGatewayError(e, this.log, { where: 'faults' })),
      fetch: (req) =>
        this.route(req).catch((e) => {
          const err = e instanceof GatewayError ? e : asGatewayError(e, this.log, { where: 'faults' })
          return failure(err)
        }),
    })
    return this
  }

  async close(): Promise<void> {
    await Promise.all([...this.sessions.values()].map((s) => this.end(s)))
    await this.server?.stop(true)
  }

  private async route(req: Request): Promise<Response> {
    const path = new URL(req.url).pathname
    const parts = path.split('/').filter(Boolean)
    const m = req.method
    if (path === '/health' && m === 'GET') return json(200, { ok: true })
    if (parts[0] !== 'sessions' || parts.length > 3) throw new GatewayError(40400, `No such route: ${m} ${path}`)
    if (parts.length === 1) {
      if (m === 'POST') return this.create(await this.body(req))
      throw new GatewayError(40500, `${m} is not allowed on /sessions`)
    }
    const session = this.sessions.get(parts[1]!)
    const sub = parts[2]
    const allowed =
      sub === undefined
        ? ['GET', 'DELETE']
        : sub === 'log'
          ? ['GET']
          : sub === 'rules' || sub === 'actions'
            ? ['POST']
            : []
    if (!allowed.length) throw new GatewayError(40400, `No such route: ${m} ${path}`)
    if (!allowed.includes(m)) throw new GatewayError(40500, `${m} is not allowed on ${path}`)
    if (!session) throw new GatewayError(40400, `No session ${parts[1]}`)
    if (sub === undefined && m === 'DELETE') return json(200, { events: await this.end(session) })
    if (sub === undefined)
      return json(200, {
        sessionId: session.id,
        port: session.port,
        target: session.target,
        ruleCount: session.rules.length,
      })
    if (sub === 'log') return json(200, { events: session.log.list() })
    // a change (rules, an action) starts the idle timer again; reading the session or its log does not
    session.touch()
    const body = await this.body(req)
    if (sub === 'rules') {
      const position = body.position ?? 'append'
      if (position !== 'append' && position !== 'prepend')
        throw new GatewayError(40003, 'position must be "append" or "prepend"')
      if (!Array.isArray(body.rules)) throw new GatewayError(40003, 'rules must be an array')
      session.addRules(parseRules(body.rules), position === 'prepend')
      return json(200, { ruleCount: session.rules.length })
    }
    return this.act(session, body)
  }

  private async body(req: Request): Promise<Record<string, unknown>> {
    const bytes = await readBody(req, {
      maxBodySize: MAX_CONTROL_BODY,
      maxNestingDepth: 64,
      requestBodyTimeoutMs: 10_000,
    })
    const v = bytes.byteLength ? parseJson(new TextDecoder().decode(bytes), 64) : {}
    if (!isObject(v)) throw new GatewayError(40001, 'The body must be a JSON object')
    return v
  }

  private async create(body: Record<string, unknown>): Promise<Response> {
    const port = body.port ?? 0
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65535)
      throw new GatewayError(40003, 'port must be an integer in [0, 65535] (0 or absent: a free one)')
    const timeoutMs = body.timeoutMs ?? DEFAULT_TIMEOUT_MS
    if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 0 || timeoutMs > MAX_TIMEOUT_MS)
      throw new GatewayError(40003, `timeoutMs must be an integer in [0, ${MAX_TIMEOUT_MS}]`)
    if (body.target !== undefined && body.target !== null && !isObject(body.target))
      throw new GatewayError(
        40003,
        'target must be an object (it is accepted and ignored: the gateway is the upstream)',
      )
    const rules = parseRules(body.rules)
    if (this.sessions.size >= this.s.faultsMaxSessions)
      throw new GatewayError(
        40900,
        `${this.s.faultsMaxSessions} fault sessions are open (FAULTS_MAX_SESSIONS): delete one first`,
      )
    const limits: SessionLimits = {
      maxRules: this.s.faultsMaxRules,
      maxLogEvents: this.s.faultsMaxLogEvents,
      maxLogBytes: this.s.faultsMaxLogBytes,
    }
    let id: string
    do id = randomBytes(4).toString('hex')
    while (this.sessions.has(id))
    const session = new Session<FaultSocket>(
      id,
      body.target ?? {},
      rules,
      timeoutMs || DEFAULT_TIMEOUT_MS,
      limits,
      (s) => {
        this.log.info('fault session timed out', { session: s.id })
        void this.end(s)
      },
    )
    try {
      session.server = listenSession(session, port, this.handlers, this.port, this.log)
    } catch (e) {
      await session.close()
      throw new GatewayError(40900, `Cannot listen on port ${port}: ${e instanceof Error ? e.message : String(e)}`)
    }
    this.sessions.set(id, session)
    this.log.info('fault session created', { session: id, port: session.port, rules: rules.length })
    return json(201, { sessionId: id, proxy: { host: `localhost:${session.port}`, port: session.port } })
  }

  private act(session: Session<FaultSocket>, body: Record<string, unknown>): Response {
    const type = body.type
    if (!IMPERATIVE_ACTIONS.includes(type as (typeof IMPERATIVE_ACTIONS)[number]))
      throw new GatewayError(40003, `type must be one of ${IMPERATIVE_ACTIONS.join(', ')}`)
    const a = parseAction(body, 'action')
    session.log.add({ type: 'action', initiator: 'proxy', message: body })
    const socket = session.activeSocket()
    if (!socket) throw new GatewayError(40900, 'No active WebSocket connection on this session')
    if (a.type === 'disconnect') socket.disconnect()
    else if (a.type === 'close') socket.close(a.closeCode ?? 1000)
    else {
      socket.inject(a.message!)
      if (a.type === 'inject_to_client_and_close') socket.close(a.closeCode ?? 1000)
    }
    return json(200, { ok: true })
  }

  /** Ends a session; its final log. */
  private async end(session: Session<FaultSocket>): Promise<FaultEvent[]> {
    this.sessions.delete(session.id)
    await session.close()
    return session.log.list()
  }
}
