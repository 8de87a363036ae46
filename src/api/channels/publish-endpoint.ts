import type { Server } from 'bun'
import type { Core } from '../../core'
import type { Principal } from '../../core/auth/principal'
import type { Logger } from '../../lib/logger'
import { credentialsOf } from '../http/credentials'
import { checkDeclaredLength, decodeReceived, mediaType, receiveBody, structured, type BodyLimits } from '../http/body'
import { useCors, type CorsPolicy } from '../http/cors'
import { toGatewayError } from '../http/errors'
import { checkQueryEncoding, pathParam } from '../http/params'
import { respond, respondError, type Reply } from '../http/responses'
import { actingFor, clientAddress, recordRequest, type AddressOf } from '../http/access-log'
import { queryOfUrl } from '../http/query'

export const PUBLISH_ROUTE = '/channels/:channel/messages'

/** A native route's part around a publish: the CORS policy, and where the access line and metrics go. */
interface NativeRoute {
  cors: CorsPolicy
  log: Logger
  addressOf: AddressOf
}

/**
 * `POST /channels/{channel}/messages`, every format through one function: credentials (header
 * or query), the body by its Content-Type (JSON, also as text/plain; msgpack; form-urlencoded;
 * declared or chunked, within the body limits), the core's publish (which validates every
 * message), and the answer in the negotiated format (`Accept`, `format=`, `envelope=`,
 * `callback=`). Every failure is answered here in the spec's error shape, never thrown. The
 * channel name is decoded from the URL by the rule of every route (http/params.ts), not taken
 * from a router: Bun's puts U+FFFD in for bytes that are not UTF-8.
 *
 * Bun's native router calls it for every publish (`publishRoute`); the Elysia route calls it too
 * (in-process requests), its parse hook leaving the body unread. Credentials are resolved before
 * the body is read, so a request without valid credentials costs no body parsing. Each header is
 * read once (a read costs ~0.1 us) and the route's pattern is read at startup.
 *
 * One async function per publish, which waits once (for the body) when the credentials are
 * cached and the core answers at once (the embedded store): the native route's access line is
 * written here rather than by a second async layer around it, and the body is received as one
 * promise (`receiveBody`), not through an async decoder.
 */
export class PublishEndpoint {
  private readonly channelOf = pathParam(PUBLISH_ROUTE, 'channel')

  constructor(
    private readonly core: Core,
    private readonly limits: BodyLimits,
    private readonly log: Logger,
  ) {}

  /** A publish of the Elysia route, whose app writes the access line: who it acted for is noted on the request. */
  handle(request: Request): Promise<Response> {
    return this.serve(request, undefined)
  }

  /** A publish; `native`: the native route's CORS policy and access line. */
  async serve(request: Request, native: NativeRoute | undefined): Promise<Response> {
    const started = native ? performance.now() : 0
    if (native) useCors(request, native.cors)
    const { core, limits } = this
    const url = request.url
    const query = queryOfUrl(url)
    let principal: Principal | undefined
    let res: Response
    try {
      const channel = this.channelOf(url)
      checkQueryEncoding(url)
      const headers = request.headers
      const length = headers.get('content-length')
      checkDeclaredLength(request, limits.maxBodySize, length)
      const creds = credentialsOf(request, query)
      principal = core.auth.cached(creds) ?? (await core.auth.authenticate(creds))
      core.stats.apiRequest(principal.appId, principal.accountId)
      const type = mediaType(headers.get('content-type') ?? '')
      const body = structured(decodeReceived(await receiveBody(request, type, limits, length), type, limits))
      if (query._forceNack !== undefined) await core.sandbox.forceNack(principal, query)
      const answer = core.publisher.publish(principal, channel!, body)
      res = respond(request, query, answer instanceof Promise ? await answer : answer, CREATED)
    } catch (e) {
      res = respondError(request, query, toGatewayError('UNKNOWN', e, this.log, request))
    }
    if (native) recordRequest(native.log, request, PUBLISH_ROUTE, res.status, started, res, principal, native.addressOf)
    else if (principal) actingFor(request, principal)
    return res
  }
}

/** The publish endpoint of a node (`PublishEndpoint`). */
export const publishHandler = (core: Core, limits: BodyLimits, log: Logger) => new PublishEndpoint(core, limits, log)

const CREATED: Reply = Object.freeze({ status: 201 })

/**
 * The publish route of Bun's native router: the endpoint plus what the Elysia app does around
 * every request (the CORS policy, the access line and metrics). Measured reason for bypassing
 * Elysia: its pipeline cost about a third of a publish (see docs/performance.md).
 */
export function publishRoute<S>(endpoint: PublishEndpoint, cors: CorsPolicy, log: Logger) {
  // the client's address, read only when an access line is written; one function per server
  let server: Server<S> | undefined
  const native: NativeRoute = { cors, log, addressOf: (r) => (server ? clientAddress(server, r) : undefined) }
  return (req: Request, srv: Server<S>): Promise<Response> => {
    server = srv
    return endpoint.serve(req, native)
  }
}
