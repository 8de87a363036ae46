import type { Backend } from '../backend'
import { RedisBroker, type RedisBrokerSettings } from './broker'
import { RedisChatStore } from './chat-store'
import { RedisAnnotationStore } from './annotation-store'
import { connectCluster } from './cluster'
import { connectStandalone, type RedisSettings } from './clients'
import { RedisControlStore } from './control-store'
import { RedisKeys } from './keys'
import { RedisMarkStore } from './mark-store'
import { RedisNonceStore } from './nonce-store'
import { RedisObjectStore } from './object-store'
import { RedisLiveObjectStore } from './live-object-store'
import { RedisOccupancyStore } from './occupancy-store'
import { RedisActiveChannelStore } from './active-channel-store'
import { RedisPresenceStore, type RedisPresenceSettings } from './presence-store'
import { randomId } from '../../lib/crypto'
import { RedisPushStore } from './push-store'
import { RedisRateLimitStore } from './rate-limit-store'
import { RedisQueueStore } from './queue-store'
import { RedisRevocationStore } from './revocation-store'
import { RedisStatsStore } from './stats-store'
import { RedisVersionStore } from './version-store'

export type RedisBackendSettings = RedisSettings &
  RedisBrokerSettings &
  Omit<RedisPresenceSettings, 'redisTimeoutMs'> & { redisPrefix: string; redisCluster?: boolean }

/**
 * The cluster backend: every node shares one Redis (one redis-server, or a Redis Cluster with
 * REDIS_CLUSTER); channel order and all state live there.
 */
export async function createRedisBackend(s: RedisBackendSettings, onError: (e: unknown) => void): Promise<Backend> {
  const report = (e: unknown) => onError(e)
  const redis = s.redisCluster ? await connectCluster(s, report) : await connectStandalone(s, report)
  const { cmd, sub, fast } = redis
  const keys = new RedisKeys(s.redisPrefix)
  const limits = new RedisRateLimitStore(fast.send, keys, s.redisTimeoutMs)
  // this node among the others (channels' subscribed nodes, occupancy reports, presence leases)
  const node = randomId(12)
  const broker = new RedisBroker(cmd, sub, keys, s, report, fast.send, redis.sendTo, redis.shardOf, limits, node)
  let control: RedisControlStore
  let revocations: RedisRevocationStore
  try {
    control = await RedisControlStore.open(cmd, sub, keys, s.redisTimeoutMs)
    revocations = await new RedisRevocationStore(cmd, keys, s.redisTimeoutMs).start(sub, report)
  } catch (e) {
    // refused (an earlier key layout) or unreachable: no connection is left open behind
    await broker.close()
    await redis.quit()
    throw e
  }
  const occupancy = new RedisOccupancyStore(cmd, node, keys, s.redisTimeoutMs, report)
  const presence = new RedisPresenceStore(cmd, keys, node, s, report)
  return {
    kind: 'redis',
    broker,
    control,
    presence,
    stats: new RedisStatsStore(cmd, keys, report),
    nonces: new RedisNonceStore(cmd, keys, s.redisTimeoutMs),
    marks: new RedisMarkStore(cmd, keys, s.redisTimeoutMs),
    revocations,
    limits,
    queues: new RedisQueueStore(cmd, keys, s.redisTimeoutMs),
    objects: new RedisObjectStore(cmd, keys, {
      historyTtlMs: s.persistedHistoryTtlMs,
      redisTimeoutMs: s.redisTimeoutMs,
    }),
    liveObjects: new RedisLiveObjectStore(cmd, keys, s),
    versions: new RedisVersionStore(cmd, keys, s.persistedHistoryTtlMs, s.redisTimeoutMs),
    chat: new RedisChatStore(cmd, keys, s.persistedHistoryTtlMs, s.redisTimeoutMs),
    annotations: new RedisAnnotationStore(cmd, keys, s.persistedHistoryTtlMs, s.redisTimeoutMs),
    push: new RedisPushStore(cmd, keys, s.redisTimeoutMs),
    occupancy,
    activeChannels: new RedisActiveChannelStore(cmd, keys, s.redisTimeoutMs, report),
    async close() {
      await broker.close()
      await occupancy.close()
      presence.close()
      await redis.quit()
    },
  }
}
