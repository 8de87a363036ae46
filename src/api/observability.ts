import { Elysia, t } from 'elysia'
import type { Core } from '../core'
import { droppedLogLines, isoNow, type Logger } from '../lib/logger'
import { metrics, NO_LABELS, type HistogramSeries, type Series } from '../lib/metrics'
import { bytesOf } from './response-bytes'

/**
 * Request ids, access logs and request metrics, plus `GET /metrics` (Prometheus text). Logs carry
 * the method and the route template, never the query string or a header: credentials stay out.
 */

/** The client's address as the socket sees it (Bun's `server.requestIP`); absent in-process. */
export type AddressOf = (request: Request) => string | undefined

/** Bun's `server.requestIP` (~1.4 us: a system call), IPv4-mapped IPv6 shown as IPv4. */
export function clientAddress(server: { requestIP(r: Request): { address: string } | null }, r: Request) {
  const a = server.requestIP(r)?.address
  return a?.startsWith('::ffff:') ? a.slice(7) : a
}

const ID = Symbol('requestId')
const PREFIX = Math.random().toString(36).slice(2, 8)
let seq = 0
const SAFE_ID = /^[\w.:@/+=-]{1,64}$/

/**
 * The request's id: its X-Request-Id header (if a plain token), or one made up for it (unique per
 * process). Kept on the request as a symbol property (a WeakMap entry cost ~400 ns per request).
 */
export function requestId(request: Request): string {
  const r = request as Request & { [ID]?: string }
  let id = r[ID]
  if (id === undefined) {
    const given = request.headers.get('x-request-id')
    r[ID] = id = given && SAFE_ID.test(given) ? given : `${PREFIX}-${(++seq).toString(36)}`
  }
  return id
}

export function interfaceOf(route: string): string {
  if (route.startsWith('/v1')) return 'management'
  if (route === '/sse' || route === '/event-stream') return 'event-stream'
  if (route.startsWith('/chat')) return 'chat'
  if (route.startsWith('/liveobjects')) return 'liveobjects'
  if (route.startsWith('/push')) return 'push'
  if (route === '/apps' || route === '/apps/:appId' || route === '/stats') return 'sandbox'
  if (route === '/health' || route === '/ready' || route === '/metrics' || /^\/(openapi|console)\b/.test(route))
    return 'ops'
  if (route === 'unmatched') return 'none'
  return 'channels'
}

export const requests = metrics.counter(
  'gateway_http_requests_total',
  'HTTP requests by interface, route template and status.',
)
const duration = metrics.histogram(
  'gateway_http_request_duration_seconds',
  'Time from request to response (to the first byte of an event stream), by interface, route template and status class.',
  [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
)
metrics.gauge(
  'gateway_log_lines_dropped_total',
  'Log lines dropped because stdout did not keep up.',
  droppedLogLines,
  NO_LABELS,
  'counter',
)

/** What one (route, status) pair counts into, found once: no label work per request. */
interface RouteStats {
  count: Series
  duration: HistogramSeries
  /** `"method":...,"route":...,"status":...` of the access line, JSON-escaped once. */
  json: string
}
const routes = new Map<string, Map<number, RouteStats>>()
const CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx']

function statsOf(method: string, route: string, status: number): RouteStats {
  let byStatus = routes.get(method + route)
  if (!byStatus) routes.set(method + route, (byStatus = new Map()))
  let s = byStatus.get(status)
  if (!s) {
    const iface = interfaceOf(route)
    s = {
      count: requests.series({ interface: iface, route, status: String(status) }),
      duration: duration.series({
        interface: iface,
        route,
        status_class: CLASSES[Math.floor(status / 100) - 1] ?? 'other',
      }),
      json: `"method":${JSON.stringify(method)},"route":${JSON.stringify(route)},"status":${status}`,
    }
    byStatus.set(status, s)
  }
  return s
}

const PLAIN = /^[\w.:@/+=-]*$/
/** A JSON string; ids and addresses are plain tokens, quoted without JSON.stringify (~80 ns each). */
const quote = (v: string) => (PLAIN.test(v) ? `"${v}"` : JSON.stringify(v))

/** Who a request acted for, when its credentials were resolved. */
export interface RequestParty {
  appId?: string
  accountId?: string
}

/**
 * Counts one finished request, observes its duration and writes its access line: one JSON line
 * per request at info (5xx at warn) with method, route template, status, duration, response
 * bytes, app and account ids, request id and client address. Nothing else of the request (no
 * query string, no header but X-Request-Id) is ever written.
 */
export function recordRequest(
  log: Logger,
  request: Request,
  route: string,
  status: number,
  started: number,
  response: Response | undefined,
  party: RequestParty | undefined,
  addressOf: AddressOf,
) {
  const seconds = (performance.now() - started) / 1000
  const s = statsOf(request.method, route, status)
  s.count.value++
  duration.observeIn(s.duration, seconds)
  const level = status >= 500 ? 'warn' : 'info'
  if (!log.enabled(level)) return
  const bytes = response && bytesOf(response)
  const client = addressOf(request)
  log.line(
    level,
    `{"time":"${isoNow()}","level":"${level}","msg":"request",${s.json},"ms":${Math.round(seconds * 1e5) / 100}` +
      (bytes === undefined ? '' : `,"bytes":${bytes}`) +
      (party?.appId ? `,"app":${quote(party.appId)}` : '') +
      (party?.accountId ? `,"account":${quote(party.accountId)}` : '') +
      `,"requestId":${quote(requestId(request))}` +
      (client ? `,"client":${quote(client)}` : '') +
      '}',
  )
}

const PARTY = Symbol('party')
const STARTED = Symbol('started')
const CLIENT = Symbol('client')

/** What the access log notes on a request while it is served (symbol properties: no context needed). */
type Noted = Request & { [PARTY]?: RequestParty; [STARTED]?: number; [CLIENT]?: string }

/**
 * For routes that authenticate in their handler (the event stream): who the request acts for,
 * noted on the request itself. Hooks and handlers destructure their context: one that takes the
 * whole context makes Elysia prepare all of it, cookies included, and then rebuild every Response
 * a route returns (an event stream kept the rebuilt one's Headers object for its life).
 */
export function actingFor(request: Request, party: RequestParty): void {
  ;(request as Noted)[PARTY] = party
}

/** What an Elysia request's auth macros resolved into its context (destructured by the hook). */
interface Resolved {
  principal?: RequestParty
  actor?: RequestParty
  mp?: { account: { id: string } }
}

/** The party of an Elysia request: noted by its handler, or resolved by its auth macro. */
function partyOf(request: Request, r: Resolved): RequestParty | undefined {
  const p = (request as Noted)[PARTY] ?? r.principal ?? r.actor
  if (p) return p
  return r.mp ? { accountId: r.mp.account.id } : undefined
}

interface AfterResponse extends Resolved {
  request: Request
  route: string
  set: { status?: number | string }
  response: unknown
}

export const observability = (core: Core, log: Logger, addressOf: AddressOf) => {
  metrics.gauge(
    'gateway_channels_subscribed',
    'Channels with local subscribers (event-stream and realtime) on this node.',
    () => core.hub.size().channels,
  )
  metrics.gauge(
    'gateway_subscriptions',
    'Channel subscriptions of event-stream and realtime connections on this node.',
    () => core.hub.size().subscriptions,
  )
  metrics.gauge('gateway_ring_channels', 'Channels held in memory by the broker.', () => core.memory().channels)
  metrics.gauge('gateway_ring_messages', 'Messages held in the in-memory ring buffers.', () => core.memory().messages)
  metrics.gauge(
    'gateway_ring_bytes',
    'Bytes of the encoded messages in the in-memory ring buffers.',
    () => core.memory().bytes,
  )
  return new Elysia({ name: 'observability', normalize: false })
    .onRequest(({ request }) => {
      const r = request as Noted
      r[STARTED] = performance.now()
      // the socket's address is gone once the response is sent (when onAfterResponse runs)
      if (log.enabled('warn')) r[CLIENT] = addressOf(request)
    })
    .onAfterResponse({ as: 'global' }, (({ request, route, set, response, principal, actor, mp }: AfterResponse) => {
      const status = response instanceof Response ? response.status : typeof set.status === 'number' ? set.status : 200
      const r = request as Noted
      const client = r[CLIENT]
      recordRequest(
        log,
        request,
        route || 'unmatched',
        status,
        r[STARTED] ?? performance.now(),
        response instanceof Response ? response : undefined,
        partyOf(request, { principal, actor, mp }),
        () => client,
      )
    }) as never)
    .get(
      '/metrics',
      () => new Response(metrics.render(), { headers: { 'content-type': 'text/plain; version=0.0.4' } }),
      {
        response: { 200: t.String({ description: 'Prometheus text exposition format 0.0.4' }) },
        detail: { summary: 'Prometheus metrics' },
      },
    )
}
