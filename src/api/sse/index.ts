import { Elysia } from 'elysia'
import type { Core } from '../../core'
import { authorize } from '../../core/channels/channel-service'
import { checkChannelName } from '../../core/channels/names'
import { StreamSession } from '../../core/fanout/session'
import { IdGenerator } from '../../core/channels/ids'
import { GatewayError } from '../../errors'
import { metrics } from '../../lib/metrics'
import { credentialsOf } from '../plugins/auth'
import { cors } from '../plugins/codec'
import { intParam } from '../params'
import { EventStreamConnection } from './connection'
import { channelsHash, decodeEventId } from './event-id'
import type { StreamMode } from './format'
import { StreamQuery } from './model'

export interface SseSettings {
  sseKeepaliveMs: number
  sseMaxChannels: number
  sseBufferBytes: number
  ringSize: number
}

export const SUPPORTED_VERSIONS = new Set(['1.0', '1.1', '1.2'])
export const MAX_REWIND = 100

type Q = Record<string, string | undefined>

const flag = (q: Q, name: string, def: boolean): boolean => {
  const v = q[name]
  if (v === undefined || v === '') return def
  if (v === 'true' || v === '1') return true
  if (v === 'false' || v === '0') return false
  throw new GatewayError(40003, `Invalid ${name} param: must be true or false`)
}

function channelList(q: Q, max: number): string[] {
  const raw = q.channels ?? q.channel
  if (!raw) throw new GatewayError(40003, 'Missing channels param')
  const names = [...new Set(raw.split(q.separator || ','))].map(checkChannelName)
  if (names.length > max) throw new GatewayError(40003, `Too many channels: at most ${max} per stream`)
  return names
}

/**
 * The read-only event-stream interface: `GET /sse` (always SSE) and `GET /event-stream` (SSE when
 * the client accepts text/event-stream, otherwise one JSON envelope per line). Every failure at
 * open is an ordinary HTTP error; later failures are `error` events.
 */
export function sseRoutes(core: Core, s: SseSettings) {
  const live = new Set<EventStreamConnection>()
  metrics.gauge('gateway_sse_connections', 'Open event-stream connections on this node.', () => live.size)
  // a revoked key (or a disabled app) ends the streams opened with it, on every node
  core.backend.control.onChange((e) => {
    if (e.kind !== 'key' && e.kind !== 'app') return
    for (const conn of live) {
      const p = conn.session?.principalOf
      if (p && (!e.appId || p.appId === e.appId)) core.auth.key(p.keyName).catch((err) => conn.end(err))
    }
  })
  const ids = new IdGenerator()
  let timer: ReturnType<typeof setInterval> | undefined

  const track = (c: EventStreamConnection) => {
    live.add(c)
    if (!timer) {
      timer = setInterval(() => { for (const conn of live) conn.keepalive() }, s.sseKeepaliveMs)
      timer.unref?.()
    }
  }
  const untrack = (c: EventStreamConnection) => {
    live.delete(c)
    if (live.size === 0 && timer) { clearInterval(timer); timer = undefined }
  }

  async function open(request: Request, q: Q, mode: StreamMode): Promise<Response> {
    if (!q.v) throw new GatewayError(40003, 'Missing v param (protocol version; 1.2 is current)')
    if (!SUPPORTED_VERSIONS.has(q.v)) throw new GatewayError(40003, `Unsupported protocol version "${q.v}" (supported: ${[...SUPPORTED_VERSIONS].join(', ')})`)
    const channels = channelList(q, s.sseMaxChannels)
    const rewind = intParam(q, 'rewind', 0, 0, MAX_REWIND)
    const enveloped = flag(q, 'enveloped', true)
    const heartbeats = flag(q, 'heartbeats', false)
    const principal = await core.auth.authenticate(credentialsOf(request, q))
    for (const ch of channels) authorize(principal, ch, 'subscribe')
    const hash = channelsHash(channels)
    const lastEvent = q.lastEvent || request.headers.get('last-event-id') || undefined
    let resumeFrom: string[] | undefined
    if (lastEvent) {
      resumeFrom = decodeEventId(lastEvent, channels)
      if (!resumeFrom) throw new GatewayError(40003, 'Invalid lastEvent: not an event id of a stream of these channels')
    }

    const conn = new EventStreamConnection({ mode, enveloped, heartbeats, channels, hash, budget: s.sseBufferBytes, onClose: untrack })
    const session = new StreamSession(core.hub, core.backend.broker, core.clock, principal, ids.next(), channels, conn, core.stats)
    conn.session = session
    track(conn)
    const start = { resumeFrom, rewind: resumeFrom ? 0 : rewind, replayLimit: s.ringSize }
    try {
      await session.prepare(start)
    } catch (e) {
      conn.close()
      throw e instanceof GatewayError ? e : new GatewayError(50003, 'Stream could not start: backend unavailable', { status: 503 })
    }
    session.replay(start).catch((e) => {
      conn.end(e instanceof GatewayError ? e : new GatewayError(50003, 'Stream interrupted: backend unavailable'))
    })
    const headers: Record<string, string> = {
      'content-type': mode === 'sse' ? 'text/event-stream' : 'application/x-ndjson',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    }
    cors(request, headers)
    return new Response(conn.stream, { status: 200, headers })
  }

  return new Elysia({ name: 'sse', normalize: false })
    .get('/sse', ({ request, query }) => open(request, query as Q, 'sse'),
      { query: StreamQuery, detail: { summary: 'Event stream (Server-Sent Events)' } })
    .get('/event-stream', ({ request, query }) =>
      open(request, query as Q, (request.headers.get('accept') ?? '').includes('text/event-stream') ? 'sse' : 'ndjson'),
    { query: StreamQuery, detail: { summary: 'Event stream: SSE or newline-delimited JSON' } })
}
