import { afterAll, beforeAll, expect, test } from 'bun:test'
import { connectRedis, type RedisClient } from '../../src/backend/redis/connection'
import { RedisKeys } from '../../src/backend/redis/keys'
import { OCCUPANCY_STALE_MS, RedisOccupancyStore } from '../../src/backend/redis/occupancy-store'
import { sharedRedis } from '../helpers/redis'

let client: RedisClient
beforeAll(async () => { client = await connectRedis({ redisUrl: (await sharedRedis()).url, redisTimeoutMs: 2000 }, () => {}) })
afterAll(async () => { await client.quit() })

test('counts add up over nodes; a node that stopped reporting no longer counts; a closed node leaves at once', async () => {
  const keys = new RedisKeys(`occ-test:${Date.now()}:`)
  const errors: unknown[] = []
  const a = new RedisOccupancyStore(client, keys, 2000, (e) => errors.push(e))
  const b = new RedisOccupancyStore(client, keys, 2000, (e) => errors.push(e))
  a.report('app', 'ch', 2)
  b.report('app', 'ch', 3)
  b.report('app', 'ch', 1) // the turn's last count is what is written
  await Bun.sleep(20)
  expect(await a.count('app', 'ch')).toBe(3)
  expect(await b.count('app', 'ch')).toBe(3)
  // a node that died without a goodbye: fresh reports count, stale ones do not
  await client.sendCommand(['HSET', keys.occupancy('app', 'ch'), 'fresh-node', `4:${Date.now()}`, 'dead-node', `9:${Date.now() - OCCUPANCY_STALE_MS - 1}`])
  expect(await a.count('app', 'ch')).toBe(7)
  await b.close()
  expect(await a.count('app', 'ch')).toBe(6)
  a.report('app', 'ch', 0)
  await Bun.sleep(20)
  expect(await a.count('app', 'ch')).toBe(4)
  expect(await client.sendCommand(['HEXISTS', keys.occupancy('app', 'ch'), 'dead-node']) as unknown).toBe(1) // gone with the key's expiry
  await a.close()
  expect(errors).toEqual([])
})
