import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { RedisClient } from 'bun'
import type * as Ably from 'ably'
import { expectError } from '../helpers/errors'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { REDIS_SERVER, TestRedis } from '../helpers/redis'
import { requireSystem } from '../helpers/system'
import { closeClients, connectedClient } from '../helpers/realtime'

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
  closeClients()
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

  test('realtime: a NACK 50003 says the outcome is unknown; a retry with the message id is stored once', async () => {
    const port = Number(new URL(gw.listen()).port)
    const client = await connectedClient(port, { key: gw.key })
    const ch = client.channels.get('slow-realtime')
    const message = { id: 'order-18:0', name: 'n', data: 'once' }
    const nacked = async (m: Ably.Message = message) => {
      const e = (await ch.publish(m).then(
        () => undefined,
        (err) => err,
      )) as Ably.ErrorInfo | undefined
      expect(e?.code).toBe(50003)
      expect(e?.message).toContain('outcome is unknown')
      expect(e?.message).toContain('retry with the same message ids')
    }
    await admin.send('CLIENT', ['PAUSE', '1000', 'WRITE'])
    // without an id (the official realtime client sets none) a NACKed publish may be stored all
    // the same: retrying it would store it twice
    await nacked({ name: 'n', data: 'no id' })
    await nacked()
    // the application retries at once (NACKed again: Redis still holds writes), then once more after
    await nacked()
    await Bun.sleep(1200)
    await ch.publish(message)
    const stored = (await (await gw.request('/channels/slow-realtime/messages?direction=forwards')).json()) as Array<{
      id: string
      data: string
    }>
    expect(stored.map((m) => m.data)).toEqual(['no id', 'once'])
    expect(stored[1]!.id).toBe('order-18:0')
  })
})
