import { Elysia } from 'elysia'
import type { Core } from './core'
import { GatewayError } from './errors'
import type { Logger } from './lib/logger'
import { channelRoutes } from './api/channels'
import { healthRoutes } from './api/health'
import { parseBody, preflight } from './api/plugins/codec'
import { errorsPlugin } from './api/plugins/errors'
import { sseRoutes, type SseSettings } from './api/sse'

export interface ServerSettings extends SseSettings { maxBodySize: number }

/** Builds the Elysia app of one node from the core. Never listens: tests call `app.handle`. */
export function buildApp(core: Core, s: ServerSettings, log: Logger) {
  return new Elysia({ name: 'gateway' })
    .use(errorsPlugin(log))
    .onRequest(({ request }) => {
      if (request.method === 'OPTIONS') return preflight(request)
      const len = request.headers.get('content-length')
      if (len !== null && Number(len) > s.maxBodySize) {
        throw new GatewayError(40009, `Request body too large (limit is ${s.maxBodySize} bytes)`)
      }
    })
    .onParse({ as: 'global' }, ({ request, contentType }) => parseBody(request, contentType))
    .use(healthRoutes(core))
    .use(channelRoutes(core))
    .use(sseRoutes(core, s))
}

export type App = ReturnType<typeof buildApp>
