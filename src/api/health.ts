import { Elysia } from 'elysia'
import type { Core } from '../core'

/** Liveness (process answers) and readiness (backends reachable). */
export const healthRoutes = (core: Core) =>
  new Elysia({ name: 'health', normalize: false })
    .get('/health', () => Response.json({ status: 'ok' }), { detail: { summary: 'Liveness' } })
    .get('/ready', async () => {
      const checks = await Promise.all([core.backend.broker.ready(), core.backend.control.ready()].map((p) => p.catch(() => false)))
      const ready = checks.every(Boolean)
      return Response.json({ status: ready ? 'ready' : 'unavailable', backend: core.backend.kind }, { status: ready ? 200 : 503 })
    }, { detail: { summary: 'Readiness: backends reachable' } })
