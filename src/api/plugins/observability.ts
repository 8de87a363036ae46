import { Elysia, t } from 'elysia'
import type { Core } from '../../core'
import type { Logger } from '../../lib/logger'
import { metrics } from '../../lib/metrics'
import { CLIENT, partyOf, recordRequest, STARTED, type AddressOf, type Noted, type Resolved } from '../http/access-log'

/**
 * Request metrics and access logs of every Elysia request (`http/access-log.ts`), plus
 * `GET /metrics` (Prometheus text).
 */

interface AfterResponse extends Resolved {
  request: Request
  route: string
  set: { status?: number | string }
  response: unknown
}

export const observability = (core: Core, log: Logger, addressOf: AddressOf) => {
  metrics.gauge(
    'gateway_channels_subscribed',
    'Channels with local subscribers (event-stream and realtime, and the keepers of realtime connections that dropped and may resume here) on this node.',
    () => core.hub.size().channels,
  )
  metrics.gauge(
    'gateway_subscriptions',
    'Channel subscriptions of event-stream and realtime connections on this node (a realtime connection that dropped keeps one per channel for its resume, up to the connection state TTL).',
    () => core.hub.size().subscriptions,
  )
  metrics.gauge('gateway_ring_channels', 'Channels held in memory by the broker.', () => core.memory().channels)
  metrics.gauge('gateway_ring_messages', 'Messages held in the in-memory ring buffers.', () => core.memory().messages)
  metrics.gauge(
    'gateway_ring_bytes',
    'Bytes of the encoded messages in the in-memory ring buffers.',
    () => core.memory().bytes,
  )
  return new Elysia({ name: 'observability', normalize: false })
    .onRequest(({ request }) => {
      const r = request as Noted
      r[STARTED] = performance.now()
      // the socket's address is gone once the response is sent (when onAfterResponse runs)
      if (log.enabled('warn')) r[CLIENT] = addressOf(request)
    })
    .onAfterResponse({ as: 'global' }, (({ request, route, set, response, principal, actor, mp }: AfterResponse) => {
      const status = response instanceof Response ? response.status : typeof set.status === 'number' ? set.status : 200
      const r = request as Noted
      const client = r[CLIENT]
      recordRequest(
        log,
        request,
        route || 'unmatched',
        status,
        r[STARTED] ?? performance.now(),
        response instanceof Response ? response : undefined,
        partyOf(request, { principal, actor, mp }),
        () => client,
      )
    }) as never)
    .get(
      '/metrics',
      () => new Response(metrics.render(), { headers: { 'content-type': 'text/plain; version=0.0.4' } }),
      {
        response: { 200: t.String({ description: 'Prometheus text exposition format 0.0.4' }) },
        detail: { summary: 'Prometheus metrics' },
      },
    )
}
