import { afterAll, beforeAll, expect, test } from 'bun:test'
import { connectRedis, type RedisClient } from '../../src/backend/redis/clients'
import { RedisKeys } from '../../src/backend/redis/keys'
import { OCCUPANCY_STALE_MS, RedisOccupancyStore } from '../../src/backend/redis/occupancy-store'
import { Occupancy } from '../../src/core/fanout/occupancy'
import { sharedRedis } from '../helpers/redis'

let client: RedisClient
beforeAll(async () => {
  client = await connectRedis({ redisUrl: (await sharedRedis()).url, redisTimeoutMs: 2000 }, () => {})
})
afterAll(async () => {
  await client.quit()
})

const counts = (
  connections: number,
  publishers = 0,
  subscribers = 0,
  presenceSubscribers = 0,
  objectPublishers = 0,
  objectSubscribers = 0,
) => ({ connections, publishers, subscribers, presenceSubscribers, objectPublishers, objectSubscribers })

test('counts add up over nodes; a node that stopped reporting no longer counts; a closed node leaves at once', async () => {
  const keys = new RedisKeys(`occ-test:${Date.now()}:`)
  const errors: unknown[] = []
  const a = new RedisOccupancyStore(client, 'node-a', keys, 2000, (e) => errors.push(e))
  const b = new RedisOccupancyStore(client, 'node-b', keys, 2000, (e) => errors.push(e))
  a.report('app', 'ch', counts(2, 1, 2, 2, 1, 2))
  b.report('app', 'ch', counts(3, 3, 0, 1, 3, 3))
  b.report('app', 'ch', counts(1, 1, 0, 0, 1, 0)) // the turn's last count is what is written
  await Bun.sleep(20)
  expect(await a.count('app', 'ch')).toEqual(counts(3, 2, 2, 2, 2, 2))
  expect(await b.count('app', 'ch')).toEqual(counts(3, 2, 2, 2, 2, 2))
  // what another node finds written: six counts, the last two the object ones
  const written = (await client.sendCommand(['HGET', keys.occupancy('app', 'ch'), 'node-b'])) as unknown as string
  expect(written.split(':')[0]).toBe('1,1,0,0,1,0')
  // a node that died without a goodbye: fresh reports count, stale ones do not; a node of an
  // earlier version writes four counts (none of objects)
  await client.sendCommand([
    'HSET',
    keys.occupancy('app', 'ch'),
    'fresh-node',
    `4,0,4,4:${Date.now()}`,
    'dead-node',
    `9,9,9,9,9,9:${Date.now() - OCCUPANCY_STALE_MS - 1}`,
  ])
  expect(await a.count('app', 'ch')).toEqual(counts(7, 2, 6, 6, 2, 2))
  await b.close()
  expect(await a.count('app', 'ch')).toEqual(counts(6, 1, 6, 6, 1, 2))
  a.report('app', 'ch', counts(0))
  await Bun.sleep(20)
  expect(await a.count('app', 'ch')).toEqual(counts(4, 0, 4, 4))
  expect((await client.sendCommand(['HEXISTS', keys.occupancy('app', 'ch'), 'dead-node'])) as unknown).toBe(1) // gone with the key's expiry
  await a.close()
  expect(errors).toEqual([])
})

test('a node counts its attachments by role and reports each change', async () => {
  const reports: unknown[] = []
  const o = new Occupancy({ report: (_a, _c, c) => reports.push(c), count: async () => counts(0) })
  o.attach('app', 'ch', { subscribe: true, presenceSubscribe: true })
  o.attach('app', 'ch', { publish: true })
  o.attach('app', 'ch', { objectPublish: true, objectSubscribe: true })
  o.attach('app', 'ch', { objectSubscribe: true })
  expect(o.local('app', 'ch')).toEqual(counts(4, 1, 1, 1, 1, 2))
  o.detach('app', 'ch', { subscribe: true, presenceSubscribe: true })
  expect(o.local('app', 'ch')).toEqual(counts(3, 1, 0, 0, 1, 2))
  o.detach('app', 'ch', { objectPublish: true, objectSubscribe: true })
  expect(o.local('app', 'ch')).toEqual(counts(2, 1, 0, 0, 0, 1))
  o.detach('app', 'ch', { objectSubscribe: true })
  o.detach('app', 'ch', { publish: true })
  expect(o.local('app', 'ch')).toEqual(counts(0))
  expect(reports.at(-1)).toEqual(counts(0))
  expect(reports).toHaveLength(8)
})
