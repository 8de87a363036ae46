import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ACCESS_TOKEN, basic, ROOT_KEY } from '../helpers/gateway'
import { GatewayNode } from '../helpers/node-process'
import { REDIS_SERVER, TestRedis } from '../helpers/redis'
import { requireSystem } from '../helpers/system'

/**
 * Rate limits across gateway processes on one redis-server. The refill is made so slow (0.01
 * messages/s, a bucket of 100) that nothing comes back while the test runs: no clock to inject.
 */
const available = requireSystem(REDIS_SERVER, 'redis-server')
let redis: TestRedis
const nodes: GatewayNode[] = []

beforeAll(async () => {
  if (!available) return
  redis = await TestRedis.start()
  const env = {
    REDIS_URL: redis.url,
    REDIS_PREFIX: 'limits:',
    BOOTSTRAP_ACCESS_TOKEN: ACCESS_TOKEN,
    RATE_LIMITS: 'on',
    LIMIT_MESSAGES_PER_SECOND: '0.01',
    RATE_LIMIT_BURST_SECONDS: '10000',
  }
  for (let i = 0; i < 3; i++) nodes.push(await GatewayNode.start(env))
}, 60_000)
afterAll(async () => {
  for (const n of nodes) await n.stop()
  await redis?.kill()
})

const json = { authorization: basic(ROOT_KEY), 'content-type': 'application/json' }
const management = { authorization: `Bearer ${ACCESS_TOKEN}`, 'content-type': 'application/json' }
const call = (node: GatewayNode, path: string, init: RequestInit = {}) =>
  fetch(`${node.url}${path}`, { headers: json, signal: AbortSignal.timeout(5000), ...init })
const publish = (node: GatewayNode, n: number, tag: string) =>
  call(node, '/channels/shared/messages', {
    method: 'POST',
    body: JSON.stringify(Array.from({ length: n }, (_, i) => ({ data: `${tag}${i}` }))),
  })
const requestToken = (node: GatewayNode) =>
  call(node, `/keys/${ROOT_KEY.split(':')[0]}/requestToken`, { method: 'POST', body: '{}' })
const expect429 = async (r: Response) => {
  expect(r.status).toBe(429)
  expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
  expect(((await r.json()) as any).error.code).toBe(42910)
}

describe.skipIf(!available)('rate limits on a Redis cluster', () => {
  test("an account's message budget is one budget for all nodes together", async () => {
    const [a, b, c] = nodes as [GatewayNode, GatewayNode, GatewayNode]
    expect((await publish(a, 40, 'a')).status).toBe(201)
    expect((await publish(b, 40, 'b')).status).toBe(201)
    expect((await publish(c, 20, 'c')).status).toBe(201)
    // the 100 of the bucket are spent: one more message is refused on every node
    for (const n of nodes) await expect429(await publish(n, 1, 'over'))
    // and nothing of the refused publishes was stored
    const history = (await (await call(b, '/channels/shared/messages?limit=1000')).json()) as Array<{ data: string }>
    expect(history.length).toBe(100)
    expect(history.some((m) => m.data.startsWith('over'))).toBe(false)
  })

  test("an override set through one node's management interface holds on every node", async () => {
    const [a, b, c] = nodes as [GatewayNode, GatewayNode, GatewayNode]
    const accountId = ((await (await call(a, '/v1/me', { headers: management })).json()) as any).account.id as string
    // 0.0002 token requests/s: a bucket of 2 (RATE_LIMIT_BURST_SECONDS is 10,000)
    const patched = await call(a, `/v1/accounts/${accountId}/limits`, {
      method: 'PATCH',
      headers: management,
      body: JSON.stringify({ tokenRequests: 0.0002 }),
    })
    expect(patched.status).toBe(200)
    for (const n of [b, c]) {
      // the change reaches the other nodes through Redis' change feed
      for (let i = 0; ; i++) {
        const limits = (await (
          await call(n, `/v1/accounts/${accountId}/limits`, { headers: management })
        ).json()) as any
        if (limits.tokenRequests.effective === 0.0002) break
        if (i === 100) throw new Error(`override not seen on ${n.url}: ${JSON.stringify(limits)}`)
        await Bun.sleep(50)
      }
    }
    expect((await requestToken(b)).status).toBe(200)
    expect((await requestToken(c)).status).toBe(200)
    await expect429(await requestToken(a))
    await expect429(await requestToken(b))
  })
})
