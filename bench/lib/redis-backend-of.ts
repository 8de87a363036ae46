import type { Backend } from '../../src/backend/backend'

/**
 * The Redis backend of the code tree at `dir` (a checkout, e.g. `git archive <rev> | tar -x -C
 * /tmp/before` with a node_modules link), on the redis-server at `url` under its own key prefix:
 * the in-process publish measures (redis-publish-cost.ts, redis-publish-instructions.ts) compare
 * trees on one server this way.
 */
export async function redisBackendOf(dir: string, url: string, prefix: string, timeoutMs = 10_000): Promise<Backend> {
  const { createRedisBackend } = (await import(`${dir}/src/backend/redis/index.ts`)) as {
    createRedisBackend(s: unknown, onError: (e: unknown) => void): Promise<Backend>
  }
  return createRedisBackend(redisBenchSettings(url, prefix, timeoutMs), (e) => console.error(`${dir}:`, e))
}

/** The Redis backend settings of the in-process measures (short history, no persistence). */
export function redisBenchSettings(url: string, prefix: string, timeoutMs = 10_000) {
  return {
    redisUrl: url,
    redisTimeoutMs: timeoutMs,
    redisPrefix: prefix,
    ringSize: 100,
    ringMaxBytes: 1 << 20,
    historyTtlMs: 120_000,
    persistedHistoryTtlMs: 86_400_000,
    idempotencyWindowMs: 120_000,
    presenceLeaseMs: 15_000,
  }
}
