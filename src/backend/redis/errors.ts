import { GatewayError } from '../../errors'
import { metrics, NO_LABELS } from '../../lib/metrics'
import { settleWithin } from '../../lib/sleep'

const latency = metrics.histogram(
  'gateway_redis_command_seconds',
  'Latency of Redis commands.',
  [0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1],
)
/** The histogram's one series, kept: an observation makes no labels key. */
const LATENCY = latency.series(NO_LABELS)
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
  )
const unavailable = () =>
  new GatewayError(
    50003,
    `Service unavailable: the message store cannot be reached. If the connection failed during the request its outcome is unknown: ${RETRY_ADVICE}`,
  )

/** A command that did not answer within REDIS_TIMEOUT_MS: 503 / 50003, the outcome unknown (counted as a failure). */
export function commandTimedOut(): GatewayError {
  failures.inc()
  return timedOut()
}

/** How long a Redis connection waits before its next attempt (ms): 50 ms doubling, at most a second. */
export const reconnectDelayMs = (tries: number): number => Math.min(50 * 2 ** tries, 1000)

/** A cluster's reply that the key's slot is served elsewhere or is moving (MOVED, ASK, TRYAGAIN, CLUSTERDOWN). */
export const topologyMoved = (message: string): boolean => /^(MOVED|ASK|TRYAGAIN|CLUSTERDOWN)\b/.test(message)

/** A command's failure as the client is told it: a GatewayError as it is, anything else 503 / 50003 (counted). */
export function commandFailed(e: unknown): GatewayError {
  failures.inc()
  return e instanceof GatewayError ? e : unavailable()
}

/** Records a command's latency, `t0` being `performance.now()` when it was sent. */
export function commandAnswered(t0: number): void {
  latency.observeIn(LATENCY, (performance.now() - t0) / 1000)
}

/** What a command's deadline rejects with (told apart from its own errors). */
const TIMED_OUT = Symbol('command deadline')
const deadlinePassed = () => TIMED_OUT

/** Rejects with 503 / 50003 when `p` takes longer than `ms` or fails: the backend is unavailable, the outcome unknown. */
export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  const t0 = performance.now()
  return settleWithin(p, ms, deadlinePassed).then(
    (v) => {
      commandAnswered(t0)
      return v
    },
    (e) => {
      throw e === TIMED_OUT ? commandTimedOut() : commandFailed(e)
    },
  )
}
