import { Elysia } from 'elysia'
import type { Core } from '../core'
import { randomId } from '../lib/crypto'
import type { Logger } from '../lib/logger'
import { metrics } from '../lib/metrics'

/**
 * Request ids, access logs and request metrics, plus `GET /metrics` (Prometheus text). Logs carry
 * the method and the route template, never the query string or a header: credentials stay out.
 */
const ids = new WeakMap<Request, string>()
const started = new WeakMap<Request, number>()

/** The request's id: its X-Request-Id header, or one made up for it. */
export function requestId(request: Request): string {
  let id = ids.get(request)
  if (!id) ids.set(request, (id = request.headers.get('x-request-id')?.slice(0, 64) || randomId(12)))
  return id
}

export const requests = metrics.counter('gateway_http_requests_total', 'HTTP requests by interface, route and status.')

export function interfaceOf(route: string): string {
  if (route.startsWith('/v1')) return 'management'
  if (route === '/sse' || route === '/event-stream') return 'event-stream'
  if (route.startsWith('/chat')) return 'chat'
  if (route.startsWith('/liveobjects')) return 'liveobjects'
  if (route === '/health' || route === '/ready' || route === '/metrics' || route.startsWith('/openapi')) return 'ops'
  return 'channels'
}

const labelSets = new Map<string, Record<string, string>>()

/** Counts (and at debug level logs) one finished request. */
export function recordRequest(log: Logger, debug: boolean, request: Request, route: string, status: number) {
  const k = `${status} ${route}`
  let labels = labelSets.get(k)
  if (!labels) labelSets.set(k, (labels = { interface: interfaceOf(route), route, status: String(status) }))
  requests.inc(labels)
  if (debug) {
    const t0 = started.get(request)
    log.debug('request', {
      requestId: requestId(request), method: request.method, route, status,
      ms: t0 === undefined ? undefined : Math.round((performance.now() - t0) * 100) / 100,
    })
  }
}

export const observability = (core: Core, log: Logger, debug: boolean) => {
  metrics.gauge('gateway_channels_subscribed', 'Channels with event-stream subscribers on this node.', () => core.hub.size().channels)
  metrics.gauge('gateway_subscriptions', 'Channel subscriptions of event-stream connections on this node.', () => core.hub.size().subscriptions)
  metrics.gauge('gateway_ring_channels', 'Channels held in memory by the broker.', () => core.backend.broker.memory?.().channels ?? 0)
  metrics.gauge('gateway_ring_messages', 'Messages held in the in-memory ring buffers.', () => core.backend.broker.memory?.().messages ?? 0)
  metrics.gauge('gateway_ring_bytes', 'Bytes of the encoded messages in the in-memory ring buffers.', () => core.backend.broker.memory?.().bytes ?? 0)
  return new Elysia({ name: 'observability', normalize: false })
    .onRequest(({ request }) => { if (debug) started.set(request, performance.now()) })
    .onAfterResponse({ as: 'global' }, ({ request, route, set, response }) => {
      const status = response instanceof Response ? response.status : typeof set.status === 'number' ? set.status : 200
      recordRequest(log, debug, request, route || 'unmatched', status)
    })
    .get('/metrics', () => new Response(metrics.render(), { headers: { 'content-type': 'text/plain; version=0.0.4' } }),
      { detail: { summary: 'Prometheus metrics' } })
}
