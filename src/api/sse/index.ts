import { Elysia } from 'elysia'
import type { Core } from '../../core'
import { parseQualifiedChannel } from '../../core/model/qualified-channel'
import { DeltaStage } from '../../core/fanout/delta-stage'
import { appendRollupWindowParam } from '../../core/fanout/delivery-stages'
import { GatewayError } from '../../errors'
import { trackConnections } from '../../lib/metrics'
import { credentialsOf } from '../http/credentials'
import { markLongLived } from '../http/long-lived'
import { cors } from '../http/cors'
import { actingFor } from '../http/access-log'
import { intParam } from '../http/query'
import { EventStreamConnection } from './connection'
import type { StreamMode } from './format'
import { EventStreamOut, StreamQuery } from './model'

export interface SseSettings {
  sseKeepaliveMs: number
  sseMaxChannels: number
  sseBufferBytes: number
  /** Largest payload sent as a delta, or used as the base of one (`[?delta=vcdiff]`; bytes). */
  deltaMaxBytes: number
  /** A stalled client is cut after this long: by then its position has left non-persisted retention. */
  historyTtlMs: number
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

/** Channel params a stream takes in a channel's qualifier (`[?delta=vcdiff]name`). */
const QUALIFIER_PARAMS = new Set(['delta'])
/** The delta format there is; a `delta` of another value is ignored (whole messages), as on a realtime attach. */
const DELTA_FORMAT = 'vcdiff'

/**
 * The stream's channels, each once, and which of them asked for deltas: by the `delta` query
 * param (every channel) or a channel's own qualifier. Another qualifier param is 40010.
 */
function channelList(q: Q, max: number): { names: string[]; deltas: boolean[] } {
  const raw = q.channels ?? q.channel
  if (!raw) throw new GatewayError(40003, 'Missing channels param')
  const all = q.delta === DELTA_FORMAT
  const wanted = new Map<string, boolean>()
  for (const name of raw.split(q.separator || ',')) {
    const { channel, params } = parseQualifiedChannel(name)
    for (const k of Object.keys(params))
      if (!QUALIFIER_PARAMS.has(k))
        throw new GatewayError(40010, `Invalid channel name: channel param "${k}" is not supported on event streams`)
    wanted.set(channel, wanted.get(channel) || all || params.delta === DELTA_FORMAT)
  }
  if (wanted.size > max) throw new GatewayError(40003, `Too many channels: at most ${max} per stream`)
  return { names: [...wanted.keys()], deltas: [...wanted.values()] }
}

/**
 * The read-only event-stream interface: `GET /sse` (always SSE) and `GET /event-stream` (SSE when
 * the client accepts text/event-stream, otherwise one JSON envelope per line). Every failure at
 * open is an ordinary HTTP error; later failures are `error` events.
 */
export function sseRoutes(core: Core, s: SseSettings) {
  const live = new Set<EventStreamConnection>()
  trackConnections('event-stream', () => live.size)
  let timer: ReturnType<typeof setInterval> | undefined
  // made once, out here: a closure made in open() would keep the request alive with the stream
  const now = () => core.clock.now()

  const track = (c: EventStreamConnection) => {
    live.add(c)
    core.accountConnections.opened(c.session!.principalOf.accountId)
    if (!timer) {
      timer = setInterval(() => {
        for (const conn of live) conn.keepalive()
      }, s.sseKeepaliveMs)
      timer.unref?.()
    }
  }
  const untrack = (c: EventStreamConnection) => {
    if (live.delete(c)) core.accountConnections.closed(c.session!.principalOf.accountId)
    if (live.size === 0 && timer) {
      clearInterval(timer)
      timer = undefined
    }
  }

  async function open(request: Request, q: Q, mode: StreamMode): Promise<Response> {
    if (!q.v) throw new GatewayError(40003, 'Missing v param (protocol version; 1.2 is current)')
    if (!SUPPORTED_VERSIONS.has(q.v))
      throw new GatewayError(
        40003,
        `Unsupported protocol version "${q.v}" (supported: ${[...SUPPORTED_VERSIONS].join(', ')})`,
      )
    const { names: channels, deltas } = channelList(q, s.sseMaxChannels)
    const rewind = intParam(q, 'rewind', 0, 0, MAX_REWIND)
    const enveloped = flag(q, 'enveloped', true)
    const heartbeats = flag(q, 'heartbeats', false)
    const principal = await core.auth.authenticate(credentialsOf(request, q))
    actingFor(request, principal)
    // a stream is a connection of its account (ACCOUNT_MAX_CONNECTIONS, ACCOUNT_MAX_CONNECTION_RATE)
    if (core.accountConnections.bounded) await core.accountConnections.admit(principal.accountId)
    const resumeToken = q.lastEvent || request.headers.get('last-event-id') || undefined
    const conn = new EventStreamConnection({
      mode,
      enveloped,
      heartbeats,
      channels,
      hash: core.streams.tokenPrefix(channels),
      budget: s.sseBufferBytes,
      stallMs: s.historyTtlMs,
      now,
      onClose: untrack,
      // deltas (fanout/delta-stage.ts): a stage per channel that asked, from the stream's first message
      deltas: deltas.includes(true) ? deltas.map((d) => (d ? new DeltaStage(s.deltaMaxBytes) : undefined)) : undefined,
    })
    const appendRollupWindowMs = appendRollupWindowParam(q.appendRollupWindow)
    conn.session = core.streams.create({ principal, channels, resumeToken, rewind, appendRollupWindowMs }, conn)
    track(conn)
    try {
      await core.streams.start(conn.session)
    } catch (e) {
      conn.close()
      throw e
    }
    const headers: Record<string, string> = {
      'content-type': mode === 'sse' ? 'text/event-stream' : 'application/x-ndjson',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    }
    cors(request, headers)
    return markLongLived(new Response(conn.stream, { status: 200, headers }))
  }

  return new Elysia({ name: 'sse', normalize: false })
    .get('/sse', ({ request, query }) => open(request, query, 'sse'), {
      query: StreamQuery,
      response: { 200: EventStreamOut },
      detail: { summary: 'Event stream (Server-Sent Events)' },
    })
    .get(
      '/event-stream',
      ({ request, query }) =>
        open(request, query, (request.headers.get('accept') ?? '').includes('text/event-stream') ? 'sse' : 'ndjson'),
      {
        query: StreamQuery,
        response: { 200: EventStreamOut },
        detail: { summary: 'Event stream: SSE or newline-delimited JSON' },
      },
    )
}
