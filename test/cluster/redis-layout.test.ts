/**
 * The Redis key layout changed for Redis Cluster (hash tags) and no migration is provided: a node
 * on a Redis that holds the earlier layout's data (its epoch key `<prefix>epoch`) refuses to start,
 * naming the way out, instead of bootstrapping a new store beside the old accounts and keys.
 */
import { expect, test } from 'bun:test'
import { createClient } from 'redis'
import { createTestGateway } from '../helpers/gateway'
import { REDIS_SERVER, sharedRedis } from '../helpers/redis'
import { requireSystem } from '../helpers/system'

test.skipIf(!requireSystem(REDIS_SERVER, 'redis-server'))(
  'a Redis written with the earlier key layout is refused at start; an empty prefix beside it starts',
  async () => {
    const redis = await sharedRedis()
    const prefix = `layout-${Date.now()}:`
    const raw = createClient({ url: redis.url })
    await raw.connect()
    try {
      await raw.set(`${prefix}epoch`, 'from-an-earlier-version')
      await expect(createTestGateway({ redisUrl: redis.url, redisPrefix: prefix })).rejects.toThrow(
        /earlier gateway version.*no migration is provided/,
      )
      const fresh = await createTestGateway({ redisUrl: redis.url, redisPrefix: `${prefix}new:` })
      await fresh.close()
    } finally {
      await raw.quit()
    }
  },
)
