import { pack, unpack } from 'msgpackr'
import { GatewayError } from '../../errors'

/**
 * Wire formats of the REST interfaces: JSON and msgpack both ways, form-urlencoded in, JSONP and
 * HTML out, the `envelope` wrapper, and CORS headers. Every REST response is written here.
 */
export type Format = 'json' | 'msgpack' | 'jsonp' | 'html'
export type Query = Record<string, string | undefined>

const JSON_TYPE = 'application/json'
const MSGPACK_TYPE = 'application/x-msgpack'
const CALLBACK = /^[A-Za-z_$][\w$.]{0,63}$/

/** Chooses the response format: an explicit Accept type wins over `format=`; JSON by default. */
export function negotiate(request: Request, query: Query): Format {
  const accept = request.headers.get('accept')
  if (accept) {
    if (accept.includes(MSGPACK_TYPE)) return 'msgpack'
    if (accept.includes(JSON_TYPE)) return 'json'
    if (accept.includes('application/javascript')) return 'jsonp'
    if (accept.includes('text/html') && !query.format) return 'html'
  }
  switch (query.format) {
    case 'msgpack': return 'msgpack'
    case 'jsonp': return 'jsonp'
    case 'html': return 'html'
    default: return 'json'
  }
}

export const binaryAllowed = (f: Format) => f === 'msgpack'

export interface Reply {
  status?: number
  headers?: Record<string, string>
  /** Link relations (first/current/next) to their relative `./x?query` URLs. */
  links?: Record<string, string>
}

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** Serializes `body` in the negotiated format (with envelope and CORS) into a Response. */
export function respond(request: Request, query: Query, body: unknown, r: Reply = {}, format = negotiate(request, query)): Response {
  let status = r.status ?? 200
  const headers: Record<string, string> = { ...r.headers }
  cors(request, headers)
  const link = r.links ? Object.entries(r.links).map(([rel, url]) => `<${url}>; rel="${rel}"`).join(', ') : undefined
  const envelope = query.envelope
  if (envelope === 'json' || envelope === 'msgpack') {
    body = { statusCode: status, response: body, headers: link ? { link } : {}, rel: r.links ?? {} }
    status = 200
    format = envelope
  } else if (link) headers.link = link
  return encode(format, body, status, headers, query)
}

/** Shared header sets for the common case (no CORS, no links, no extra headers): cheaper responses. */
const PLAIN_JSON = new Headers({ 'content-type': JSON_TYPE })
const PLAIN_MSGPACK = new Headers({ 'content-type': MSGPACK_TYPE })
const isEmpty = (o: Record<string, string>) => { for (const _ in o) return false; return true }

function encode(format: Format, body: unknown, status: number, headers: Record<string, string>, query: Query): Response {
  switch (format) {
    case 'msgpack': {
      const h = isEmpty(headers) ? PLAIN_MSGPACK : Object.assign(headers, { 'content-type': MSGPACK_TYPE })
      return new Response(body === undefined ? null : (pack(body) as Uint8Array<ArrayBuffer>), { status, headers: h })
    }
    case 'jsonp': {
      const cb = query.callback && CALLBACK.test(query.callback) ? query.callback : 'callback'
      headers['content-type'] = 'application/javascript'
      return new Response(`${cb}(${JSON.stringify(body ?? null)});`, { status, headers })
    }
    case 'html':
      headers['content-type'] = 'text/html; charset=utf-8'
      return new Response(`<!DOCTYPE html><html><body><pre>${escapeHtml(JSON.stringify(body ?? null, null, 2))}</pre></body></html>`, { status, headers })
    default: {
      const h = isEmpty(headers) ? PLAIN_JSON : Object.assign(headers, { 'content-type': JSON_TYPE })
      return new Response(body === undefined ? null : JSON.stringify(body), { status, headers: h })
    }
  }
}

/** 204 No Content, through `respond` so CORS (and an envelope, when asked) come along. */
export const noContent = (request: Request, query: Query = {}): Response => respond(request, query, undefined, { status: 204 })

/**
 * Error response with the exact Content-Type and the X-Ably-ErrorCode / X-Ably-ErrorMessage
 * headers; msgpack for msgpack clients, JSON for everyone else (JSONP and HTML included).
 */
export function respondError(request: Request, query: Query, err: GatewayError): Response {
  const headers: Record<string, string> = {
    ...err.headers,
    'x-ably-errorcode': String(err.code),
    'x-ably-errormessage': err.message.replace(/[^\x20-\x7e]/g, '?'),
  }
  const format = negotiate(request, query) === 'msgpack' ? 'msgpack' : 'json'
  return respond(request, query, { error: err.toBody() }, { status: err.statusCode, headers }, format)
}

const ALLOW_HEADERS = 'authorization,content-type,x-ably-version,ably-agent,x-ably-clientid,x-ably-devicetoken,last-event-id,accept'
const EXPOSE_HEADERS = 'link,x-ably-errorcode,x-ably-errormessage,retry-after,x-request-id'

/** Adds CORS headers: the Origin is echoed with credentials allowed, as browser clients need. */
export function cors(request: Request, headers: Record<string, string>): void {
  const origin = request.headers.get('origin')
  if (!origin) return
  headers['access-control-allow-origin'] = origin
  headers['access-control-allow-credentials'] = 'true'
  headers['access-control-expose-headers'] = EXPOSE_HEADERS
  headers.vary = 'Origin'
}

export function preflight(request: Request): Response {
  const headers: Record<string, string> = {
    'access-control-allow-methods': 'GET,POST,PUT,PATCH,DELETE,OPTIONS',
    'access-control-allow-headers': request.headers.get('access-control-request-headers') ?? ALLOW_HEADERS,
    'access-control-max-age': '86400',
  }
  cors(request, headers)
  return new Response(null, { status: 204, headers })
}

/** Body parsers for the content types Elysia does not handle itself the way we need. */
export async function parseBody(request: Request, contentType: string): Promise<unknown> {
  const type = contentType.split(';')[0]!.trim().toLowerCase()
  if (type === MSGPACK_TYPE) {
    const buf = new Uint8Array(await request.arrayBuffer())
    if (buf.length === 0) return undefined
    let value: unknown
    try { value = unpack(buf) } catch { throw new GatewayError(40001, 'Invalid request body: malformed msgpack') }
    return structured(value)
  }
  if (type === 'application/x-www-form-urlencoded') {
    return Object.fromEntries(new URLSearchParams(await request.text()))
  }
  if (type === 'text/plain' || type === JSON_TYPE || type === '') {
    const text = await request.text()
    if (!text) return undefined
    let value: unknown
    try { value = JSON.parse(text) } catch { throw new GatewayError(40001, 'Invalid request body: malformed JSON') }
    return structured(value)
  }
  return undefined
}

/** Every body of this API is an object or an array; a bare string or number is refused here. */
function structured(value: unknown): unknown {
  const plain = Array.isArray(value) || (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype)
  if (!plain) throw new GatewayError(40001, 'Invalid request body: must be an object or an array')
  return value
}
