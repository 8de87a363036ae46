/**
 * CORS for browser clients: which origins may read answers (`CORS_ORIGINS`), the headers on every
 * response and the answer to preflight requests.
 *
 * Credentials: browser clients of the hosted service (ably-js) send `credentials: include` exactly
 * when they send an Authorization header, and then need the origin echoed with
 * `Access-Control-Allow-Credentials: true`. The gateway never authenticates by cookie or any
 * other credential a browser attaches by itself, so only requests that carry their own
 * Authorization header (or preflights announcing one) are told credentials are allowed; every
 * other answer to an allowed origin echoes it without the flag.
 */

const ALLOW_HEADERS =
  'authorization,content-type,x-ably-version,ably-agent,x-ably-clientid,x-ably-devicetoken,last-event-id,accept'
const EXPOSE_HEADERS = 'link,x-ably-errorcode,x-ably-errormessage,retry-after,x-request-id'

export class CorsPolicy {
  private readonly any: boolean
  private readonly origins: ReadonlySet<string>

  /** `['*']`: any origin; `[]`: none; otherwise exact origins (`scheme://host[:port]`). */
  constructor(origins: readonly string[]) {
    this.any = origins.includes('*')
    this.origins = new Set(origins)
  }

  /** Whether a request from `origin` (the Origin header; absent for same-origin and non-browser calls) may be answered with CORS headers. */
  allows(origin: string | null): boolean {
    return origin === null || this.any || this.origins.has(origin)
  }

  /** Adds the CORS headers of an answer to `request` (none without an Origin or for an origin not allowed). */
  apply(request: Request, headers: Record<string, string>, credentials = request.headers.has('authorization')): void {
    const origin = request.headers.get('origin')
    if (origin === null || !this.allows(origin)) return
    headers['access-control-allow-origin'] = origin
    if (credentials) headers['access-control-allow-credentials'] = 'true'
    headers['access-control-expose-headers'] = EXPOSE_HEADERS
    headers.vary = 'Origin'
  }

  /** The answer to an OPTIONS request of an allowed origin (see `allows`). */
  preflight(request: Request): Response {
    const asked = request.headers.get('access-control-request-headers')
    const headers: Record<string, string> = {
      'access-control-allow-methods': 'GET,POST,PUT,PATCH,DELETE,OPTIONS',
      'access-control-allow-headers': asked ?? ALLOW_HEADERS,
      'access-control-max-age': '86400',
    }
    this.apply(request, headers, asked !== null && /(^|[\s,])authorization($|[\s,])/i.test(asked))
    return new Response(null, { status: 204, headers })
  }
}

/**
 * The policy of each request that has an Origin, set where the request enters (the Elysia app's
 * first hook, the native publish route): responses are written far from the settings, by `respond`
 * and the event stream, with only the request at hand. Kept on the request as a symbol property:
 * a WeakMap (set, and looked up for every response) cost more, as for the request id.
 */
const POLICY = Symbol('corsPolicy')
type WithPolicy = Request & { [POLICY]?: CorsPolicy }

export function useCors(request: Request, policy: CorsPolicy): void {
  if (request.headers.has('origin')) (request as WithPolicy)[POLICY] = policy
}

/** Whether `request` has a CORS policy (it came with an Origin), so that `cors` may add headers. */
export const hasCors = (request: Request): boolean => (request as WithPolicy)[POLICY] !== undefined

/** Adds the CORS headers of `request`'s policy; none when no policy was set for it. */
export function cors(request: Request, headers: Record<string, string>): void {
  ;(request as WithPolicy)[POLICY]?.apply(request, headers)
}
