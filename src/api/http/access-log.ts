import { droppedLogLines, isoNow, type Logger } from '../../lib/logger'
import { metrics, NO_LABELS, type HistogramSeries, type Series } from '../../lib/metrics'
import { bytesOf } from './response-bytes'
import { requestId } from './request-id'

/**
 * Access logs and request metrics. Logs carry the method and the route template, never the query
 * string or a header: credentials stay out.
 */

/** The client's address as the socket sees it (Bun's `server.requestIP`); absent in-process. */
export type AddressOf = (request: Request) => string | undefined

/** Bun's `server.requestIP` (~1.4 us: a system call), IPv4-mapped IPv6 shown as IPv4. */
export function clientAddress(server: { requestIP(r: Request): { address: string } | null }, r: Request) {
  const a = server.requestIP(r)?.address
  return a?.startsWith('::ffff:') ? a.slice(7) : a
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
/** By route, then method, then status: no key made per request (a concatenation is hashed anew each time). */
const routes = new Map<string, Map<string, Map<number, RouteStats>>>()
const CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx']

function statsOf(method: string, route: string, status: number): RouteStats {
  let byMethod = routes.get(route)
  if (!byMethod) routes.set(route, (byMethod = new Map()))
  let byStatus = byMethod.get(method)
  if (!byStatus) byMethod.set(method, (byStatus = new Map()))
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
export const STARTED = Symbol('started')
export const CLIENT = Symbol('client')

/** What the access log notes on a request while it is served (symbol properties: no context needed). */
export type Noted = Request & { [PARTY]?: RequestParty; [STARTED]?: number; [CLIENT]?: string }

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
export interface Resolved {
  principal?: RequestParty
  actor?: RequestParty
  mp?: { account: { id: string } }
}

/** The party of an Elysia request: noted by its handler, or resolved by its auth macro. */
export function partyOf(request: Request, r: Resolved): RequestParty | undefined {
  const p = (request as Noted)[PARTY] ?? r.principal ?? r.actor
  if (p) return p
  return r.mp ? { accountId: r.mp.account.id } : undefined
}
