import { Elysia, t } from 'elysia'
import type { Core } from '../core'

const Ready = t.Object({
  status: t.String({ description: 'ready | unavailable' }),
  backend: t.String(),
  problem: t.Optional(t.String({ description: 'why not ready (e.g. the store lost its data)' })),
})

/** Liveness (process answers) and readiness (node started: bootstrapped, backends reachable). */
export const healthRoutes = (core: Core, started: () => boolean) =>
  new Elysia({ name: 'health', normalize: false })
    .get('/health', () => Response.json({ status: 'ok' }), {
      response: { 200: t.Object({ status: t.Literal('ok') }) },
      detail: { summary: 'Liveness' },
    })
    .get(
      '/ready',
      async () => {
        const health = await core.health()
        const ready = started() && health.ready
        return Response.json(
          {
            status: ready ? 'ready' : 'unavailable',
            backend: health.backend,
            ...(health.problem ? { problem: health.problem } : {}),
          },
          { status: ready ? 200 : 503 },
        )
      },
      {
        response: {
          200: Ready,
          503: Ready,
        },
        detail: { summary: 'Readiness: bootstrapped, backends reachable, data intact' },
      },
    )
