import { GatewayError } from '../../errors'

/**
 * One decoding rule for every parameter of every route, path and query alike: percent-escapes
 * are decoded as UTF-8, and a malformed escape (`%ZZ`) or bytes that are not UTF-8 (`%ED%A0%80`,
 * a surrogate; `%E0y`, a truncated sequence) are refused with 400, never replaced (Bun's router
 * and URLSearchParams put U+FFFD in) nor kept as sent (Elysia's query parser does). Before, the
 * same URL published to `\uFFFDy` on one route and was refused on the next.
 *
 * A parameter naming a channel (a chat room is one) is refused with 40010 as any invalid
 * channel name is; any other with 40003.
 */

/** Parameters that name a channel, by what they are called in messages. */
const CHANNEL_PARAMS: Readonly<Record<string, string>> = {
  channel: 'channel name',
  channels: 'channel name',
  roomId: 'room id',
}

const refuse = (name: string): GatewayError => {
  const what = CHANNEL_PARAMS[name]
  return what
    ? new GatewayError(40010, `Invalid ${what}: not valid percent-encoded UTF-8`)
    : new GatewayError(40003, `Invalid ${name} param: not valid percent-encoded UTF-8`)
}

/** `raw` percent-decoded as UTF-8; undefined when an escape is malformed or the bytes are not UTF-8. */
export function strictDecode(raw: string): string | undefined {
  if (!raw.includes('%')) return raw
  try {
    return decodeURIComponent(raw)
  } catch {
    return undefined
  }
}

/** The path of a request URL as it was sent (still percent-encoded), without query or fragment. */
export function rawPathOf(url: string): string {
  const start = url.indexOf('/', url.indexOf('//') + 2)
  if (start < 0) return '/'
  const q = url.indexOf('?', start)
  const h = url.indexOf('#', start)
  const end = Math.min(q < 0 ? url.length : q, h < 0 ? url.length : h)
  return url.slice(start, end)
}

/**
 * The parameters of `route` (a pattern such as `/channels/:channel/messages`) in the request URL,
 * decoded by the rule above; throws 400 for the first that breaks it.
 */
export function pathParams(route: string, url: string): Record<string, string> {
  const params: Record<string, string> = {}
  const named = namedSegments(route)
  if (!named.length) return params
  const segments = rawPathOf(url).split('/')
  for (const [i, name] of named) {
    const raw = segments[i]
    if (raw === undefined) continue
    const value = strictDecode(raw)
    if (value === undefined) throw refuse(name)
    params[name] = value
  }
  return params
}

/**
 * One parameter of `route` as a function of the request URL, decoded by the rule above (throws
 * 400 when it breaks it; undefined when the URL has no such segment): what `pathParams` gives for
 * that name, with the pattern read once and no array or object made per request, for a route
 * served outside Elysia (the native publish route).
 */
export function pathParam(route: string, name: string): (url: string) => string | undefined {
  const index = namedSegments(route).find(([, n]) => n === name)?.[0]
  if (index === undefined) throw new Error(`${route} has no parameter ${name}`)
  return (url) => {
    const path = rawPathOf(url)
    // the segment `index` of path.split('/'), found without the split
    let from = 0
    for (let i = 0; i < index; i++) {
      const slash = path.indexOf('/', from)
      if (slash < 0) return undefined
      from = slash + 1
    }
    const end = path.indexOf('/', from)
    const value = strictDecode(end < 0 ? path.slice(from) : path.slice(from, end))
    if (value === undefined) throw refuse(name)
    return value
  }
}

/** Each route's parameters as [segment index, name], read once per route (the routes are a fixed set). */
const patterns = new Map<string, ReadonlyArray<readonly [number, string]>>()

function namedSegments(route: string): ReadonlyArray<readonly [number, string]> {
  let named = patterns.get(route)
  if (named) return named
  named = route
    .split('/')
    .flatMap((p, i) => (p[0] === ':' ? [[i, p.endsWith('?') ? p.slice(1, -1) : p.slice(1)] as const] : []))
  // bounded however routes are named
  if (patterns.size < 1000) patterns.set(route, named)
  return named
}

/** Refuses a query string a name or value of which breaks the rule above (`+` is a space, as in forms). */
export function checkQueryEncoding(url: string): void {
  const q = url.indexOf('?')
  if (q < 0 || url.indexOf('%', q) < 0) return
  const h = url.indexOf('#', q)
  for (const pair of url.slice(q + 1, h < 0 ? undefined : h).split('&')) {
    if (!pair.includes('%')) continue
    const eq = pair.indexOf('=')
    const name = strictDecode((eq < 0 ? pair : pair.slice(0, eq)).replaceAll('+', ' '))
    if (name === undefined)
      throw new GatewayError(40003, 'Invalid query: a parameter name is not valid percent-encoded UTF-8')
    if (eq >= 0 && strictDecode(pair.slice(eq + 1).replaceAll('+', ' ')) === undefined) throw refuse(name)
  }
}

/**
 * Elysia transform hook: the request's path parameters by the rule (overriding the router's own
 * decoding, which turns a bad escape into a missing value), and its query checked by it.
 */
export function decodeParams({ request, route, params }: { request: Request; route: string; params: unknown }): void {
  checkQueryEncoding(request.url)
  const decoded = pathParams(route, request.url)
  const into = params as Record<string, unknown> | undefined
  if (!into) return
  for (const k in decoded) into[k] = decoded[k]
}
