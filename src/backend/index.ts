import type { Backend, Clock } from '../core/ports'
import { createMemoryBackend } from './memory'
import type { MemoryBrokerSettings } from './memory/broker'

export interface BackendSettings extends MemoryBrokerSettings {
  dataDir: string
  redisUrl: string
}

/** The one switch between backends: REDIS_URL set means Redis, otherwise the embedded store. */
export async function createBackend(s: BackendSettings, clock: Clock): Promise<Backend> {
  if (s.redisUrl) throw new Error('REDIS_URL is set, but the Redis backend is not built yet (issue: Redis Streams backend); unset it to run embedded')
  return createMemoryBackend(s, clock)
}
