/**
 * On a Redis Cluster (TEST_BACKEND=redis-cluster) the presence bookkeeping of realtime connections
 * is spread over the masters: each connect claims its connection in the connection's bucket
 * (keys.ts presenceBucket), so connection rates grow with the shards instead of all claims
 * landing on one. Realtime clients connect; their holder keys are looked up on each master.
 * Elsewhere there is one shard: nothing to see.
 */
import { describe, expect, test } from 'bun:test'
import { RedisKeys } from '../../src/backend/redis/keys'
import { connectedClient, realtimeGateway } from '../helpers/realtime'
import { rawRedis } from '../helpers/redis-cluster'

const onCluster = process.env.TEST_BACKEND === 'redis-cluster'
/** Enough connections that all of them on one master of 3 by chance is out of reach (3 / 3^16). */
const CONNECTIONS = 16

const rt = realtimeGateway()

describe.skipIf(!onCluster)('presence bookkeeping on a Redis Cluster', () => {
  test("the connections' holders are spread over the masters, each on one", async () => {
    const clients = await Promise.all(
      Array.from({ length: CONNECTIONS }, () => connectedClient(rt.port, { key: rt.gw.key })),
    )
    const ids = clients.map((c) => c.connection.id!)
    const keys = new RedisKeys(rt.gw.config.redisPrefix)
    const redis = await rawRedis({ redisUrl: rt.gw.config.redisUrl!, redisCluster: true })
    try {
      // the holder keys each master has (a master lists the keys of its own slots only): `<prefix>pch:*`
      const perMaster = (await redis.onEach(['KEYS', keys.presenceHolderPrefix(0).replace(/\{.*$/, '*')])).map(
        (names) => new Set((names as unknown[]).map(String)),
      )
      for (const id of ids) expect(perMaster.filter((m) => m.has(keys.presenceHolder(id))).length).toBe(1)
      expect(perMaster.length).toBe(3)
      expect(perMaster.filter((m) => m.size > 0).length).toBeGreaterThan(1)
    } finally {
      await redis.close()
    }
  })
})
