import type { Backend, Clock } from '../core/ports'
import { createMemoryBackend } from './memory'
import type { MemoryBrokerSettings } from './memory/broker'
import { createRedisBackend, type RedisBackendSettings } from './redis'

export type BackendSettings = MemoryBrokerSettings & RedisBackendSettings & { dataDir: string }

/** The one switch between backends: REDIS_URL set means Redis, otherwise the embedded store. */
export async function createBackend(
  s: BackendSettings,
  clock: Clock,
  onError: (e: unknown) => void = () => {},
): Promise<Backend> {
  if (s.redisUrl) return createRedisBackend(s, onError)
  return createMemoryBackend(s, clock)
}
