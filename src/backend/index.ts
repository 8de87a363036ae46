import { brokerQueue } from '../core/control/integrations'
import type { Clock } from '../core/ports'
import type { Backend } from './backend'
import { createAmqpQueueBroker, type AmqpSettings } from './amqp'
import { createMemoryBackend, type MemoryBrokerSettings } from './memory'
import { createRedisBackend, type RedisBackendSettings } from './redis'

export type BackendSettings = MemoryBrokerSettings & RedisBackendSettings & AmqpSettings & { dataDir: string }

/**
 * The one switch between backends: REDIS_URL set means Redis, otherwise the embedded store.
 * AMQP_URL set adds app queues on that broker (beside either).
 */
export async function createBackend(
  s: BackendSettings,
  clock: Clock,
  onError: (e: unknown) => void = () => {},
): Promise<Backend> {
  const backend = s.redisUrl ? await createRedisBackend(s, onError) : createMemoryBackend(s, clock)
  if (!s.amqpUrl) return backend
  const control = backend.control
  const appQueues = async (appId: string) =>
    (await control.getApp(appId)) ? (await control.listQueues(appId)).map(brokerQueue) : undefined
  const queueBroker = createAmqpQueueBroker(s, () => control.secret(), appQueues, onError)
  const close = backend.close.bind(backend)
  backend.queueBroker = queueBroker
  backend.close = async () => {
    await queueBroker.close()
    await close()
  }
  return backend
}
