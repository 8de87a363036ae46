/**
 * Test infrastructure of the conformance runner, never part of the gateway: a stand-in, inside the
 * run's network namespace, for the hosts outside Ably's service that the official suites and the
 * client reach, so a test that goes out only for them tests the gateway instead of failing:
 *
 * - `echo.ably.io`, Ably's public test-support echo server: `/createJWT` (an Ably JWT, or an external
 *   JWT embedding a token, signed with the key secret the caller passes), `/` (answers the `body`,
 *   `type` and `status` it is given), `/respondwith?status=N`, `/qs_to_body` (the query string as a
 *   JSON body) and `/methods` (the request's method). It takes no WebSocket, as the real one.
 * - `internet-up.ably-realtime.com`: the client's connectivity check (`/is-the-internet-up.txt`
 *   answers `yes`).
 * - `ws-up.ably-realtime.com`: the client's WebSocket connectivity check (any upgrade is accepted).
 *
 * The rules are the endpoints' as the suites use them, inferred from every call in the suites; see
 * docs/tests.md (Conformance).
 */
import { createCipheriv, createHash, createHmac, randomBytes } from 'node:crypto'

export const ECHO_HOST = 'echo.ably.io'
export const INTERNET_UP_HOST = 'internet-up.ably-realtime.com'
export const WS_UP_HOST = 'ws-up.ably-realtime.com'
export const ECHO_HOSTS = [ECHO_HOST, INTERNET_UP_HOST, WS_UP_HOST]
/** The loopback address the stand-in listens on (the gateway has 127.0.0.1). */
export const ECHO_ADDRESS = '127.0.0.2'

/** A request's parameters: the query string, then a form or JSON object body (the body's win). */
type Params = Record<string, string>

const MAX_BODY = 1 << 20
const DEFAULT_JWT_TTL_S = 3600

/** A refusal in plain text: the echo server is no Ably endpoint, so it sends no Ably error body. */
function fail(status: number, message: string): Response {
  return new Response(`${message}\n`, { status, headers: { 'content-type': 'text/plain' } })
}

async function paramsOf(req: Request, url: URL): Promise<Params> {
  const params: Params = Object.fromEntries(url.searchParams)
  if (req.method === 'GET' || req.method === 'HEAD') return params
  const text = await req.text()
  const type = req.headers.get('content-type') ?? ''
  if (type.includes('application/x-www-form-urlencoded'))
    Object.assign(params, Object.fromEntries(new URLSearchParams(text)))
  else if (type.includes('application/json') && text) {
    const body: unknown = JSON.parse(text)
    if (body && typeof body === 'object' && !Array.isArray(body))
      for (const [k, v] of Object.entries(body)) params[k] = typeof v === 'string' ? v : JSON.stringify(v)
  }
  return params
}

function statusOf(value: string | undefined, fallback: number): number | undefined {
  if (value === undefined) return fallback
  const n = Number(value)
  return Number.isInteger(n) && n >= 200 && n <= 599 ? n : undefined
}

const b64url = (data: string | Buffer) => Buffer.from(data).toString('base64url')

/** An HS256 JWS of `header` and `claims`, signed with `secret`. */
function jws(header: object, claims: object, secret: string): string {
  const signed = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(claims))}`
  return `${signed}.${createHmac('sha256', secret).update(signed).digest('base64url')}`
}

/** A compact JWE (`dir`, A256GCM, the key the SHA-256 of `secret`) of `claims`; the header stays readable. */
function jwe(header: object, claims: object, secret: string): string {
  const protectedHeader = b64url(JSON.stringify({ ...header, alg: 'dir', enc: 'A256GCM' }))
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', createHash('sha256').update(secret).digest(), iv)
  cipher.setAAD(Buffer.from(protectedHeader, 'ascii'))
  const text = Buffer.concat([cipher.update(JSON.stringify(claims)), cipher.final()])
  return [protectedHeader, '', b64url(iv), b64url(text), b64url(cipher.getAuthTag())].join('.')
}

/**
 * `/createJWT`: `keyName` and `keySecret` (required) sign it; `iat` and `exp` (s) or `expiresIn` (s)
 * or `ttl` (ms, default 1 h) time it; `capability` (a JSON string, default all) and `clientId` become
 * `x-ably-capability` and `x-ably-clientId`, and any parameter named `x-ably-…` or `ably.…` (the
 * documented per-channel, room and rate-limit claims, the revocation key) becomes that claim.
 * With `innerToken` it is an external JWT embedding that token in its JOSE header (`x-ably-token`),
 * naming no Ably key (so only the embedded token authenticates), encrypted (JWE) with `encrypted=1`.
 * `returnType=jwt` answers `application/jwt`, else `text/plain`.
 */
export function createJwt(p: Params, nowMs: number): Response {
  const { keyName, keySecret } = p
  if (!keyName || !keySecret) return fail(400, 'keyName and keySecret are required')
  const iat = p.iat !== undefined ? Number(p.iat) : Math.floor(nowMs / 1000)
  const life =
    p.expiresIn !== undefined ? Number(p.expiresIn) : p.ttl !== undefined ? Number(p.ttl) / 1000 : DEFAULT_JWT_TTL_S
  const exp = p.exp !== undefined ? Number(p.exp) : iat + Math.floor(life)
  if (!Number.isFinite(iat) || !Number.isFinite(exp) || exp <= iat) return fail(400, 'invalid JWT expiry')
  const header = { typ: 'JWT', alg: 'HS256', kid: keyName }
  const claims: Record<string, unknown> = { iat, exp }
  let token: string
  if (p.innerToken) {
    // an external JWT as the docs' example makes one: no Ably key named, the token in the header
    const outer = { typ: 'JWT', alg: 'HS256', 'x-ably-token': p.innerToken }
    token =
      p.encrypted === '1' || p.encrypted === 'true' ? jwe(outer, claims, keySecret) : jws(outer, claims, keySecret)
  } else if (p.jwtType === 'embedded') {
    // the real echo server fetches the embedded token from the hosted sandbox itself
    return fail(400, 'jwtType=embedded needs innerToken here: the stand-in requests no token')
  } else {
    claims['x-ably-capability'] = p.capability ?? '{"*":["*"]}'
    if (p.clientId !== undefined) claims['x-ably-clientId'] = p.clientId
    for (const [k, v] of Object.entries(p)) if (/^(x-ably-|ably\.)/.test(k)) claims[k] = v
    token = jws(header, claims, keySecret)
  }
  return new Response(token, {
    headers: { 'content-type': p.returnType === 'jwt' ? 'application/jwt' : 'text/plain' },
  })
}

/** The echo server's endpoints (`echo.ably.io`). */
export async function echo(req: Request, url: URL, nowMs: number): Promise<Response> {
  let p: Params
  try {
    p = await paramsOf(req, url)
  } catch {
    return fail(400, 'unreadable request body')
  }
  switch (url.pathname) {
    case '/createJWT':
      return createJwt(p, nowMs)
    case '/respondwith': {
      const status = statusOf(p.status, 200)
      return status ? new Response(`responded with ${status}\n`, { status }) : fail(400, 'invalid status')
    }
    case '/qs_to_body':
      return Response.json(Object.fromEntries(url.searchParams))
    case '/methods':
      return Response.json({ method: req.method.toLowerCase() })
    case '/': {
      // `body` as given (else the other parameters as JSON), as `type` says, with `status`
      const { type, status: s, body, ...rest } = p
      const status = statusOf(s, 200)
      if (!status) return fail(400, 'invalid status')
      if (type !== 'json' && type !== 'text') return fail(400, 'type must be json or text')
      return new Response(body ?? JSON.stringify(rest), {
        status,
        // with its charset, as web servers send JSON (ably-js reads an error body as an Ably error
        // only when the type is exactly `application/json`: a 403 with a foreign JSON body is a 403)
        headers: { 'content-type': type === 'json' ? 'application/json; charset=utf-8' : 'text/plain; charset=utf-8' },
      })
    }
  }
  return fail(404, `no endpoint ${url.pathname}`)
}

export interface EchoServerOptions {
  hostname: string
  port: number
  tls?: { cert: string; key: string }
  /** Called with one line per request answered. */
  log?: (line: string) => void
}

/** Starts the stand-in for ECHO_HOSTS; they are told apart by the Host header. */
export function startEchoServer(o: EchoServerOptions) {
  return Bun.serve({
    hostname: o.hostname,
    port: o.port,
    ...(o.tls ? { tls: o.tls } : {}),
    maxRequestBodySize: MAX_BODY,
    async fetch(req, server) {
      const url = new URL(req.url)
      const host = (req.headers.get('host') ?? '').replace(/:\d+$/, '')
      let res: Response | undefined
      if (host === WS_UP_HOST) {
        if (server.upgrade(req, { data: undefined })) {
          o.log?.(`${req.method} ${host}${url.pathname} upgraded`)
          return undefined
        }
        res = fail(426, 'WebSocket upgrade expected')
      } else if (host === INTERNET_UP_HOST)
        res =
          url.pathname === '/is-the-internet-up.txt'
            ? new Response('yes\n', { headers: { 'content-type': 'text/plain' } })
            : fail(404, `no endpoint ${url.pathname}`)
      else if (host === ECHO_HOST) res = await echo(req, url, Date.now())
      else res = fail(404, `unknown host ${host}`)
      o.log?.(`${req.method} ${host}${url.pathname}${url.search.slice(0, 200)} ${res.status}`)
      return res
    },
    websocket: { message() {} },
  })
}
