/**
 * Control changes (apps, keys, ...) made on one node are heard by every other node in the order
 * they were made. On a Redis Cluster a broadcast reaches a subscriber from whichever master took
 * it, over the cluster bus, and the bus keeps order per master only: so every announcement of a
 * channel is sent to one master; and each kind's records live on a shard of their own, so the
 * change read back from a slower shard must not be applied after a later one. A node that waits
 * for the echo of its own change (as tests and operators do) may then trust that every change
 * announced before it has been applied.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { ControlEvent } from '../../src/core/ports'
import { addApp, createTestGateway, type TestGateway } from '../helpers/gateway'
import { REDIS_CLI, sharedRedisCluster } from '../helpers/redis-cluster'
import { REDIS_SERVER } from '../helpers/redis'
import { requireSystem } from '../helpers/system'

const available = requireSystem(REDIS_SERVER, 'redis-server') && requireSystem(REDIS_CLI, 'redis-cli')
const APPS = 40
let a: TestGateway
let b: TestGateway

beforeAll(async () => {
  if (!available) return
  // on a cluster of the tests' own whatever TEST_BACKEND says (3 masters: the kinds' hashes spread)
  const settings = {
    redisUrl: (await sharedRedisCluster()).url,
    redisCluster: true,
    redisPrefix: `order-${Date.now()}:`,
  }
  a = await createTestGateway(settings)
  b = await createTestGateway(settings)
})
afterAll(async () => {
  await b?.close()
  await a?.close()
})

test.skipIf(!available)('changes of different kinds made on one node are heard on another in that order', async () => {
  const heard: string[] = []
  b.backend.control.onChange((e: ControlEvent) => {
    if (e.appId?.startsWith('order-')) heard.push(`${e.kind} ${e.appId}`)
  })
  const made: string[] = []
  // an app, then its key: two kinds, kept on two hashes (two shards of a cluster)
  for (let i = 0; i < APPS; i++) {
    await addApp(a, `order-${i}`)
    made.push(`app order-${i}`, `key order-${i}`)
  }
  for (let i = 0; i < 1000 && heard.length < made.length; i++) await Bun.sleep(10)
  expect(heard).toEqual(made)
})
