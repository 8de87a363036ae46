import { RESP_TYPES, createClient } from 'redis'
import { GatewayError } from '../../errors'

export type RedisClient = ReturnType<typeof createClient>

export interface RedisSettings { redisUrl: string; redisTimeoutMs: number }

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
    socket: { connectTimeout: s.redisTimeoutMs, reconnectStrategy: (retries: number) => Math.min(50 * 2 ** retries, 1000) },
  })
  client.on('error', onError)
  await withTimeout(client.connect(), s.redisTimeoutMs)
  return client as RedisClient
}

/** Rejects with 503 / 50003 when `p` takes longer than `ms` or fails: the backend is unavailable. */
export async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error('redis timeout')), ms) }),
    ])
  } catch (e) {
    if (e instanceof GatewayError) throw e
    throw new GatewayError(50003, 'Service unavailable: the message store cannot be reached', { status: 503 })
  } finally {
    clearTimeout(timer)
  }
}
