import { pack } from 'msgpackr'
import { GatewayError } from '../../errors'
import { sized } from './response-bytes'
import { cors, hasCors } from './cors'

/**
 * Responses of the REST interfaces: JSON and msgpack, JSONP and HTML, the `envelope` wrapper.
 * Every REST response is written here (CORS headers come from `cors.ts`, bodies are read in
 * `body.ts`).
 */
export type Format = 'json' | 'msgpack' | 'jsonp' | 'html'
export type Query = Record<string, string | undefined>

export const JSON_TYPE = 'application/json'
export const MSGPACK_TYPE = 'application/x-msgpack'
const CALLBACK = /^[A-Za-z_$][\w$.]{0,63}$/

/**
 * Chooses the response format: an explicit Accept type wins over `format=`; a `callback` alone
 * asks for JSONP (as `<script>` loaders send it); JSON by default.
 */
export function negotiate(request: Request, query: Query): Format {
  const accept = request.headers.get('accept')
  if (accept) {
    if (accept.includes(MSGPACK_TYPE)) return 'msgpack'
    if (accept.includes(JSON_TYPE)) return 'json'
    if (accept.includes('application/javascript')) return 'jsonp'
    if (accept.includes('text/html') && !query.format) return 'html'
  }
  switch (query.format) {
    case 'msgpack':
      return 'msgpack'
    case 'jsonp':
      return 'jsonp'
    case 'html':
      return 'html'
    case undefined:
      return query.callback ? 'jsonp' : 'json'
    default:
      return 'json'
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

/** The headers of a response that has none of its own and no CORS headers: never written. */
const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>

/** Serializes `body` in the negotiated format (with envelope and CORS) into a Response. */
export function respond(
  request: Request,
  query: Query,
  body: unknown,
  r: Reply = {},
  format = negotiate(request, query),
): Response {
  let status = r.status ?? 200
  // a spread of nothing still copies through the runtime's generic path; no object at all when
  // nothing will be added (NO_HEADERS is never written: encode copies it for JSONP and HTML)
  const headers: Record<string, string> = r.headers ? { ...r.headers } : hasCors(request) || r.links ? {} : NO_HEADERS
  cors(request, headers)
  const link = r.links
    ? Object.entries(r.links)
        .map(([rel, url]) => `<${url}>; rel="${rel}"`)
        .join(', ')
    : undefined
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
const isEmpty = (o: Record<string, string>) => {
  for (const _ in o) return false
  return true
}

function encode(
  format: Format,
  body: unknown,
  status: number,
  headers: Record<string, string>,
  query: Query,
): Response {
  switch (format) {
    case 'msgpack': {
      const h = isEmpty(headers) ? PLAIN_MSGPACK : Object.assign(headers, { 'content-type': MSGPACK_TYPE })
      if (body === undefined) return new Response(null, { status, headers: h })
      const bytes = pack(body) as Uint8Array<ArrayBuffer>
      return sized(new Response(bytes, { status, headers: h }), bytes.length)
    }
    case 'jsonp': {
      const cb = query.callback && CALLBACK.test(query.callback) ? query.callback : 'callback'
      const text = `${cb}(${JSON.stringify(body ?? null)});`
      return sized(
        new Response(text, { status, headers: { ...headers, 'content-type': 'application/javascript' } }),
        text,
      )
    }
    case 'html':
      const html = `<!DOCTYPE html><html><body><pre>${escapeHtml(JSON.stringify(body ?? null, null, 2))}</pre></body></html>`
      return sized(
        new Response(html, { status, headers: { ...headers, 'content-type': 'text/html; charset=utf-8' } }),
        html,
      )
    default: {
      const h = isEmpty(headers) ? PLAIN_JSON : Object.assign(headers, { 'content-type': JSON_TYPE })
      if (body === undefined) return new Response(null, { status, headers: h })
      const text = JSON.stringify(body)
      return sized(new Response(text, { status, headers: h }), text)
    }
  }
}

/** 204 No Content, through `respond` so CORS (and an envelope, when asked) come along. */
export const noContent = (request: Request, query: Query = {}): Response =>
  respond(request, query, undefined, { status: 204 })

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
