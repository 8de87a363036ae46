import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { RedisClient } from 'bun'
import { expectError } from '../helpers/errors'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { REDIS_SERVER, TestRedis } from '../helpers/redis'
import { requireSystem } from '../helpers/system'

/**
 * A publish answered 503 because Redis was too slow may still be stored: the error says the
 * outcome is unknown and to retry with the same message ids, and that retry publishes it once.
 */
const available = requireSystem(REDIS_SERVER, 'redis-server')
let redis: TestRedis
let gw: TestGateway
let admin: RedisClient
beforeAll(async () => {
  if (!available) return
  redis = await TestRedis.start()
  gw = await createTestGateway({ redisUrl: redis.url, redisPrefix: 'timeout:', redisTimeoutMs: 200 })
  admin = new RedisClient(redis.url)
})
afterAll(async () => {
  admin?.close()
  await gw?.close()
  await redis?.kill()
})

const publish = (id: string) =>
  gw.request('/channels/slow/messages', { method: 'POST', json: { id, name: 'n', data: 'once' } })

describe.skipIf(!available)('a Redis timeout on publish', () => {
  test('is 503 with the outcome unknown, the message may be stored, and a retry with its id publishes it once', async () => {
    // Redis holds every write for 1 s: the publish script waits there, queued, past the timeout
    await admin.send('CLIENT', ['PAUSE', '1000', 'WRITE'])
    const e = await expectError(await publish('order-17:0'), 503, 50003)
    expect(e.message).toContain('outcome is unknown')
    expect(e.message).toContain('retry with the same message ids')
    await Bun.sleep(1200)
    // it was stored after all (as the hosted service warns): the retry gets the same message, once
    const history = async () =>
      (await (await gw.request('/channels/slow/messages')).json()) as Array<{ id: string; serial: string }>
    const stored = await history()
    expect(stored.map((m) => m.id)).toEqual(['order-17:0'])
    const retry = await publish('order-17:0')
    expect(retry.status).toBe(201)
    expect(((await retry.json()) as any).serials).toEqual([stored[0]!.serial])
    expect((await history()).map((m) => m.id)).toEqual(['order-17:0'])
  })
})
