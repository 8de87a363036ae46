import type { Server } from 'bun'
import type { Core } from '../../core'
import type { Principal } from '../../core/auth/principal'
import type { Logger } from '../../lib/logger'
import { credentialsOf } from '../http/credentials'
import { checkDeclaredLength, decodeBody, structured, type BodyLimits } from '../http/body'
import { useCors, type CorsPolicy } from '../http/cors'
import { toGatewayError } from '../http/errors'
import { checkQueryEncoding, pathParam } from '../http/params'
import { respond, respondError, type Reply } from '../http/responses'
import { clientAddress, recordRequest } from '../http/access-log'
import { queryOf } from '../http/query'

export const PUBLISH_ROUTE = '/channels/:channel/messages'

/** Who a publish acted for, once its credentials are resolved (for the access log). */
export interface PublishParty {
  principal?: Principal
}

export type PublishHandler = (request: Request, party: PublishParty) => Promise<Response>

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
 */
export function publishHandler(core: Core, limits: BodyLimits, log: Logger): PublishHandler {
  const channelOf = pathParam(PUBLISH_ROUTE, 'channel')
  return async (request, party) => {
    const query = queryOf(request)
    try {
      const url = request.url
      const channel = channelOf(url)
      checkQueryEncoding(url)
      const headers = request.headers
      const length = headers.get('content-length')
      checkDeclaredLength(request, limits.maxBodySize, length)
      const creds = credentialsOf(request, query)
      const principal = core.auth.cached(creds) ?? (await core.auth.authenticate(creds))
      party.principal = principal
      core.stats.apiRequest(principal.appId, principal.accountId)
      const body = structured(await decodeBody(request, headers.get('content-type') ?? '', limits, length))
      if (query._forceNack !== undefined) await core.sandbox.forceNack(principal, query)
      return respond(request, query, await core.publisher.publish(principal, channel!, body), CREATED)
    } catch (e) {
      return respondError(request, query, toGatewayError('UNKNOWN', e, log, request))
    }
  }
}

const CREATED: Reply = Object.freeze({ status: 201 })

/**
 * The publish route of Bun's native router: the handler plus what the Elysia app does around
 * every request (the CORS policy, the access line and metrics). Measured reason for bypassing
 * Elysia: its pipeline cost about a third of a publish (see docs/performance.md).
 */
export function publishRoute<S>(handler: PublishHandler, cors: CorsPolicy, log: Logger) {
  return async (req: Request & { params: { channel: string } }, server: Server<S>): Promise<Response> => {
    const started = performance.now()
    useCors(req, cors)
    const party: PublishParty = {}
    const res = await handler(req, party)
    recordRequest(log, req, PUBLISH_ROUTE, res.status, started, res, party.principal, (r) => clientAddress(server, r))
    return res
  }
}
