import { RedisClient as BunRedisClient } from 'bun'
import { RESP_TYPES, createClient } from 'redis'
import { GatewayError } from '../../errors'
import { metrics } from '../../lib/metrics'

export type RedisClient = ReturnType<typeof createClient>

/** Sends one raw command (`[name, ...args]`) and resolves with the reply. */
export type Sender = (args: Array<string | Buffer>) => Promise<unknown>

export interface RedisSettings {
  redisUrl: string
  redisTimeoutMs: number
}

/** Replies as Buffers (message bodies are binary msgpack). */
export const BUFFERS = { typeMapping: { [RESP_TYPES.BLOB_STRING]: Buffer } } as const

/**
 * A client that fails fast while Redis is unreachable (no offline queue) and reconnects by
 * itself with capped backoff; errors are logged by the caller, never thrown at random.
 */
export async function connectRedis(s: RedisSettings, onError: (e: Error) => void): Promise<RedisClient> {
  const client = createClient({
    url: s.redisUrl,
    disableOfflineQueue: true,
    socket: {
      connectTimeout: s.redisTimeoutMs,
      reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 1000),
    },
  })
  client.on('error', onError)
  await withTimeout(client.connect(), s.redisTimeoutMs)
  return client as RedisClient
}

const latency = metrics.histogram(
  'gateway_redis_command_seconds',
  'Latency of Redis commands.',
  [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1],
)
const failures = metrics.counter('gateway_redis_errors_total', 'Redis commands that failed or timed out.')

/**
 * A command that timed out or whose connection failed may still have been applied by Redis (it
 * can be queued there, or its reply lost): the client is told the outcome is unknown and how to
 * retry safely. Message ids make a publish idempotent (IDEMPOTENCY_WINDOW_MS), and the official
 * client supplies them by default.
 */
const RETRY_ADVICE = 'retry with the same message ids: a message id is published only once'
const timedOut = () =>
  new GatewayError(
    50003,
    `Service unavailable: the message store did not answer in time. The outcome is unknown (the request may still take effect): ${RETRY_ADVICE}`,
    { status: 503 },
  )
const unavailable = () =>
  new GatewayError(
    50003,
    `Service unavailable: the message store cannot be reached. If the connection failed during the request its outcome is unknown: ${RETRY_ADVICE}`,
    { status: 503 },
  )

/**
 * Commands in flight with their deadlines. One sweeper timer (every 25 ms, while any are pending)
 * fails the late ones: no timer per command on the hot path.
 */
const inFlight = new Set<{ deadline: number; fail: () => void }>()
let sweeper: ReturnType<typeof setInterval> | undefined

function sweep() {
  const now = performance.now()
  for (const e of inFlight)
    if (e.deadline <= now) {
      inFlight.delete(e)
      e.fail()
    }
  if (inFlight.size === 0 && sweeper) {
    clearInterval(sweeper)
    sweeper = undefined
  }
}

/** Rejects with 503 / 50003 when `p` takes longer than `ms` or fails: the backend is unavailable, the outcome unknown. */
export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  const t0 = performance.now()
  return new Promise<T>((resolve, reject) => {
    let settled = false
    const entry = {
      deadline: t0 + ms,
      fail: () => {
        if (settled) return
        settled = true
        failures.inc()
        reject(timedOut())
      },
    }
    inFlight.add(entry)
    if (!sweeper) {
      sweeper = setInterval(sweep, 25)
      sweeper.unref?.()
    }
    p.then(
      (v) => {
        inFlight.delete(entry)
        if (settled) return
        settled = true
        latency.observe({}, (performance.now() - t0) / 1000)
        resolve(v)
      },
      (e) => {
        inFlight.delete(entry)
        if (settled) return
        settled = true
        failures.inc()
        reject(e instanceof GatewayError ? e : unavailable())
      },
    )
  })
}

/**
 * Bun's native Redis client, for the commands of the publish path (publish and rate-limit
 * scripts): here it costs about a sixth of node-redis per command (its writes go through Node's
 * stream layer). Replies come back as strings, so it serves only commands without binary replies.
 * Fails fast while Redis is unreachable and reconnects by itself.
 */
export async function connectFastSender(
  s: RedisSettings,
  onError: (e: Error) => void,
): Promise<{ send: Sender; close(): void }> {
  const client = new BunRedisClient(s.redisUrl, {
    enableOfflineQueue: false,
    autoReconnect: true,
    maxRetries: 1_000_000,
    connectionTimeout: s.redisTimeoutMs,
  })
  let closed = false
  client.onclose = (e) => {
    if (closed) return
    onError(e)
    // after a give-up (or an idle close) try again, forever, every half second
    setTimeout(() => {
      if (!closed && !client.connected) client.connect().catch(() => {})
    }, 500).unref?.()
  }
  await withTimeout(client.connect(), s.redisTimeoutMs)
  return {
    send: (args) => client.send(String(args[0]), args.slice(1) as string[]),
    close: () => {
      closed = true
      client.close()
    },
  }
}
