import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { RedisClient } from 'bun'
import { createRedisBackend } from '../../src/backend/redis'
import { bootstrap } from '../../src/core/control/bootstrap'
import { systemClock } from '../../src/lib/clock'
import { loadConfig } from '../../src/config'
import { GatewayNode } from '../helpers/node-process'
import { REDIS_SERVER, TestRedis } from '../helpers/redis'
import { requireSystem } from '../helpers/system'

/**
 * Nodes started at once on an empty Redis bootstrap it once: one account, one "shown once"
 * token printed by exactly one node, accepted by all of them.
 */
const available = requireSystem(REDIS_SERVER, 'redis-server')
let redis: TestRedis
beforeAll(async () => {
  if (available) redis = await TestRedis.start()
})
afterAll(async () => {
  await redis?.kill()
})

const SHOWN = /management access token: (\S+)/g

describe.skipIf(!available)('bootstrap on one Redis', () => {
  test('many stores bootstrapping one empty Redis at the same moment create one account, one token', async () => {
    for (let round = 0; round < 5; round++) {
      const settings = loadConfig(
        {},
        {
          redisUrl: redis.url,
          redisPrefix: `race${round}:`,
          bootstrapKey: '',
          bootstrapAccessToken: '',
          bootstrapAccountId: '',
        },
      )
      const backends = await Promise.all(Array.from({ length: 6 }, () => createRedisBackend(settings, () => {})))
      try {
        const results = await Promise.all(backends.map((b) => bootstrap(b.control, systemClock, settings)))
        const creators = results.filter((r) => r.created)
        expect(creators).toHaveLength(1)
        expect(new Set(results.map((r) => r.accountId)).size).toBe(1)
        expect(new Set(results.map((r) => r.epoch)).size).toBe(1)
        for (const b of backends) {
          expect(await b.control.listAccounts()).toHaveLength(1)
          // every node knows the one token and key that were printed
          const { hash } = (await b.control.getAccessTokenByHash(
            new Bun.CryptoHasher('sha256').update(creators[0]!.created!.accessToken!).digest('hex'),
          ))!
          expect(hash).toBeDefined()
          expect(await b.control.getKey(creators[0]!.created!.key!.split(':')[0]!)).toBeDefined()
        }
      } finally {
        await Promise.all(backends.map((b) => b.close()))
      }
    }
  })

  test('three gateway processes started at once on an empty Redis print one token, which all of them accept', async () => {
    const admin = new RedisClient(redis.url)
    for (let round = 0; round < 3; round++) {
      const env = {
        REDIS_URL: redis.url,
        REDIS_PREFIX: `procs${round}:`,
        REDIS_TIMEOUT_MS: '8000',
        BOOTSTRAP_KEY: '',
        LOG_LEVEL: 'warn',
      }
      // Redis holds every command until all three processes are up and waiting on it, so they
      // bootstrap at the same moment (process start-up jitter would otherwise mostly hide a race)
      await admin.send('CLIENT', ['PAUSE', '2500'])
      const nodes = await Promise.all([0, 1, 2].map(() => GatewayNode.start(env)))
      try {
        const tokens = nodes.flatMap((n) => [...n.log.matchAll(SHOWN)].map((m) => m[1]!))
        expect(tokens).toHaveLength(1)
        for (const n of nodes) {
          const r = await fetch(`${n.url}/v1/accounts`, { headers: { authorization: `Bearer ${tokens[0]}` } })
          expect(r.status).toBe(200)
          expect((await r.json()) as unknown[]).toHaveLength(1)
        }
      } finally {
        await Promise.all(nodes.map((n) => n.stop()))
      }
    }
    admin.close()
  }, 60_000)
})
