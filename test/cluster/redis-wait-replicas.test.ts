/**
 * REDIS_WAIT_REPLICAS on one redis-server without replicas: WAIT cannot be met, so a publish is
 * stored but never ACKed: 503 / 50003 saying so (retry with the same id), and the retry, finding
 * the message stored, waits again rather than answering 201 on one copy.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { REDIS_SERVER, sharedRedis } from '../helpers/redis'
import { requireSystem } from '../helpers/system'

const available = requireSystem(REDIS_SERVER, 'redis-server')
let gw: TestGateway
beforeAll(async () => {
  if (!available) return
  gw = await createTestGateway({
    redisUrl: (await sharedRedis()).url,
    redisPrefix: `wait-${Date.now()}:`,
    redisWaitReplicas: 1,
    redisTimeoutMs: 400,
  })
})
afterAll(async () => {
  await gw?.close()
})

describe.skipIf(!available)('REDIS_WAIT_REPLICAS', () => {
  test('no replica to confirm: the publish is stored but answered 503, and so is its retry', async () => {
    const publish = () =>
      gw.request('/channels/waits/messages', { method: 'POST', json: { id: 'once', name: 'n', data: 'x' } })
    for (let i = 0; i < 2; i++) {
      const r = await publish()
      expect(r.status).toBe(503)
      const body = (await r.json()) as { error: { code: number; message: string } }
      expect(body.error.code).toBe(50003)
      expect(body.error.message).toContain('replicas')
    }
    const h = await gw.request('/channels/waits/messages')
    expect(((await h.json()) as Array<{ id: string }>).map((m) => m.id)).toEqual(['once'])
  })
})
