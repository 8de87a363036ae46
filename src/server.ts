import { Elysia } from 'elysia'
import { openapi } from '@elysiajs/openapi'
import type { Core } from './core'
import { GatewayError } from './errors'
import type { Logger } from './lib/logger'
import { channelRoutes } from './api/channels'
import { chatRoutes } from './api/chat'
import { controlRoutes } from './api/control'
import { integrationRoutes } from './api/control/integrations'
import { sandboxRoutes } from './api/control/sandbox'
import { fastPublish } from './api/channels/fast-publish'
import { healthRoutes } from './api/health'
import { objectRoutes } from './api/objects'
import { pushRoutes } from './api/push'
import { parseBody, preflight } from './api/plugins/codec'
import { errorsPlugin } from './api/plugins/errors'
import { observability } from './api/observability'
import { sseRoutes, type SseSettings } from './api/sse'

export interface ServerSettings extends SseSettings {
  maxBodySize: number
  sandboxProvisioning: boolean
  logLevel: string
  tlsCertFile: string
  tlsKeyFile: string
}

/** Builds the Elysia app of one node from the core. Never listens: tests call `app.handle`. */
export function buildApp(core: Core, s: ServerSettings, log: Logger) {
  return new Elysia({ name: 'gateway', normalize: false })
    .use(errorsPlugin(log))
    .use(observability(core, log, s.logLevel === 'debug'))
    .onRequest(({ request }) => {
      if (request.method === 'OPTIONS') return preflight(request)
      const len = request.headers.get('content-length')
      if (len !== null && Number(len) > s.maxBodySize) {
        throw new GatewayError(40009, `Request body too large (limit is ${s.maxBodySize} bytes)`)
      }
    })
    .onParse({ as: 'global' }, ({ request, contentType }) => parseBody(request, contentType))
    .use(openapi({
      path: '/openapi',
      documentation: {
        info: { title: 'Messaging gateway', version: '1', description: 'Channel REST, event stream (SSE) and management (/v1) interfaces.' },
      },
    }))
    .use(healthRoutes(core))
    .use(channelRoutes(core))
    .use(sseRoutes(core, s))
    .use(controlRoutes(core))
    .use(integrationRoutes(core))
    .use(sandboxRoutes(core, s.sandboxProvisioning))
    .use(objectRoutes(core))
    .use(chatRoutes(core))
    .use(pushRoutes(core))
}

export type App = ReturnType<typeof buildApp>

export interface ListenOptions { port: number; hostname: string }

/**
 * Serves the app: Bun's native router takes the publish hot path, everything else goes through
 * Elysia. Idle timeout is off (event streams are long-lived and send their own keepalives).
 */
export function serve(app: App, core: Core, s: ServerSettings, log: Logger, o: ListenOptions) {
  const fetch = (req: Request) => {
    // Elysia finds the path at index >= 11 of the URL: a very short Host (`Host: gw`) would lose it
    const slash = req.url.indexOf('/', req.url.indexOf('//') + 2)
    return app.fetch(slash >= 11 ? req : new Request('http://localhost' + req.url.slice(slash), req))
  }
  return Bun.serve({
    port: o.port,
    hostname: o.hostname,
    idleTimeout: 0,
    maxRequestBodySize: s.maxBodySize + 1024,
    tls: s.tlsCertFile ? { cert: Bun.file(s.tlsCertFile), key: Bun.file(s.tlsKeyFile) } : undefined,
    routes: { '/channels/:channel/messages': { POST: fastPublish(core, s.maxBodySize, log, s.logLevel === 'debug', fetch) } },
    fetch,
  })
}
