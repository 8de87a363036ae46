import type { Core } from '../../core'
import { GatewayError } from '../../errors'
import type { Logger } from '../../lib/logger'
import { credentialsOf } from '../plugins/auth'
import { respond, respondError } from '../plugins/codec'
import { toGatewayError } from '../plugins/errors'
import { recordRequest } from '../observability'

const NO_QUERY = Object.freeze({}) as Record<string, string | undefined>
const ROUTE = '/channels/:channel/messages'

/**
 * The hot path of `POST /channels/{channel}/messages`, served straight from Bun's native router:
 * a plain JSON publish with header credentials and no query string. It calls the same core and
 * codec as the Elysia route; any other request (msgpack, form, query parameters) is handed to
 * the Elysia app unchanged. Measured reason: the full Elysia pipeline costs about a third of a
 * publish on this path (see README, Performance).
 */
export function fastPublish(core: Core, maxBodySize: number, log: Logger, debug: boolean, fallback: (req: Request) => Response | Promise<Response>) {
  const done = (req: Request, res: Response) => {
    recordRequest(log, debug, req, ROUTE, res.status)
    return res
  }
  return async (req: Request & { params: { channel: string } }): Promise<Response> => {
    if (req.headers.get('content-type') !== 'application/json' || req.url.includes('?')) return fallback(req)
    try {
      const len = req.headers.get('content-length')
      if (len !== null && Number(len) > maxBodySize) throw new GatewayError(40009, `Request body too large (limit is ${maxBodySize} bytes)`)
      const creds = credentialsOf(req, NO_QUERY)
      const principal = core.auth.cached(creds) ?? (await core.auth.authenticate(creds))
      core.stats.apiRequest(principal.appId, principal.accountId)
      let body: unknown
      try { body = await req.json() } catch { throw new GatewayError(40001, 'Invalid request body: malformed JSON') }
      if (body === null || typeof body !== 'object') throw new GatewayError(40001, 'Invalid request body: must be an object or an array')
      return done(req, respond(req, NO_QUERY, await core.channels.publish(principal, req.params.channel, body), { status: 201 }))
    } catch (e) {
      return done(req, respondError(req, NO_QUERY, toGatewayError('UNKNOWN', e, log, req)))
    }
  }
}
