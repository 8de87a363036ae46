/**
 * With REDIS_SKIP_OWN_NOTIFICATIONS, a node hears no notification of its own publishes when no
 * other node listens to the channel:
 * the publish script sends one only when another node subscribes (the channel's subscriber
 * count and its set of nodes, subscriptions.ts), and the publishing node delivers what it
 * appended itself. Every message still reaches every subscriber on every node, in order, as
 * nodes subscribe and unsubscribe; notifications sent are counted by redis-server's own stats.
 * On one redis-server and on a Redis Cluster of the tests' own.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { RedisKeys } from '../../src/backend/redis/keys'
import type { Message } from '../../src/core/types'
import { APP_ID, createTestGateway, type TestGateway } from '../helpers/gateway'
import { REDIS_SERVER, TestRedis } from '../helpers/redis'
import { REDIS_CLI, rawRedis, sharedRedisCluster } from '../helpers/redis-cluster'
import { requireSystem } from '../helpers/system'

const available = requireSystem(REDIS_SERVER, 'redis-server') && requireSystem(REDIS_CLI, 'redis-cli')
let redis: TestRedis | undefined
beforeAll(async () => {
  if (available) redis = await TestRedis.start()
})
afterAll(async () => {
  await redis?.kill()
})

describe.skipIf(!available).each(['redis-server', 'cluster'])('on %s', (kind) => {
  let a: TestGateway
  let b: TestGateway
  let raw: Awaited<ReturnType<typeof rawRedis>>
  beforeAll(async () => {
    const settings =
      kind === 'cluster'
        ? { redisUrl: (await sharedRedisCluster()).url, redisCluster: true }
        : { redisUrl: redis!.url, redisCluster: false }
    const config = { ...settings, redisPrefix: `own-${Date.now()}:`, redisSkipOwnNotifications: true }
    a = await createTestGateway(config)
    b = await createTestGateway(config)
    raw = await rawRedis(config)
  })
  afterAll(async () => {
    await raw?.close()
    await b?.close()
    await a?.close()
  })

  /** SPUBLISH calls made so far, on every master. */
  async function notifications(): Promise<number> {
    let n = 0
    for (const info of await raw.onEach(['INFO', 'commandstats']))
      n += Number(/cmdstat_spublish:calls=(\d+)/.exec(String(info))?.[1] ?? 0)
    return n
  }
  const nodesIn = async (channel: string) =>
    Number(await raw.send(['ZCARD', new RedisKeys(a.config.redisPrefix).nodes(APP_ID, channel)]))
  async function until(what: () => Promise<boolean> | boolean) {
    for (let i = 0; i < 500 && !(await what()); i++) await Bun.sleep(10)
    expect(await what()).toBe(true)
  }
  const subscribe = (gw: TestGateway, channel: string, got: string[]) =>
    gw.backend.broker.subscribe(APP_ID, channel, (_a, _c, ms: Message[]) => got.push(...ms.map((m) => String(m.data))))
  async function publish(gw: TestGateway, channel: string, from: number, count: number) {
    for (let i = from; i < from + count; i++) {
      const r = await gw.request(`/channels/${channel}/messages`, {
        method: 'POST',
        json: { name: 'n', data: `m${i}` },
      })
      expect(r.status).toBe(201)
    }
  }
  const range = (from: number, count: number) => Array.from({ length: count }, (_, i) => `m${from + i}`)

  test('alone, a node is not notified of its own publishes; with another subscriber both are, in order', async () => {
    const channel = `own-${kind}`
    const gotA: string[] = []
    const gotB: string[] = []
    const offA = subscribe(a, channel, gotA)
    await until(async () => (await nodesIn(channel)) === 1)
    let before = await notifications()
    await publish(a, channel, 0, 20)
    await until(() => gotA.length === 20)
    expect(gotA).toEqual(range(0, 20))
    expect(await notifications()).toBe(before)

    // another node subscribes: it hears what follows, from either node
    const offB = subscribe(b, channel, gotB)
    await until(async () => (await nodesIn(channel)) === 2)
    before = await notifications()
    await publish(a, channel, 20, 10)
    await publish(b, channel, 30, 10)
    await until(() => gotA.length === 40 && gotB.length === 20)
    expect(gotA).toEqual(range(0, 40))
    expect(gotB).toEqual(range(20, 20))
    expect(await notifications()).toBeGreaterThan(before)

    // it leaves: its publishes to the channel still reach the other node's subscriber (notified)
    offB()
    await until(async () => (await nodesIn(channel)) === 1)
    before = await notifications()
    await publish(b, channel, 40, 5)
    await until(() => gotA.length === 45)
    expect(await notifications()).toBeGreaterThan(before)
    // and the subscribing node's own are not
    before = await notifications()
    await publish(a, channel, 45, 5)
    await until(() => gotA.length === 50)
    expect(gotA).toEqual(range(0, 50))
    expect(await notifications()).toBe(before)
    expect(gotB).toEqual(range(20, 20))

    // a node that stopped without leaving, its time run out: still counted (notified) until a
    // join drops its entry
    const set = new RedisKeys(a.config.redisPrefix).nodes(APP_ID, channel)
    await raw.send(['ZADD', set, String(Date.now() - 1000), 'a-node-gone'])
    before = await notifications()
    await publish(a, channel, 50, 3)
    await until(() => gotA.length === 53)
    expect(await notifications()).toBeGreaterThan(before)
    const offB2 = subscribe(b, channel, gotB)
    await until(async () => (await nodesIn(channel)) === 2) // b in, the gone node out
    offB2()
    await until(async () => (await nodesIn(channel)) === 1)
    before = await notifications()
    await publish(a, channel, 53, 2)
    await until(() => gotA.length === 55)
    expect(gotA).toEqual(range(0, 55))
    expect(await notifications()).toBe(before)

    // nobody subscribes: nothing is sent
    offA()
    await until(async () => (await nodesIn(channel)) === 0)
    before = await notifications()
    await publish(b, channel, 55, 5)
    expect(await notifications()).toBe(before)
    expect(gotA.length).toBe(55)
  })
})
