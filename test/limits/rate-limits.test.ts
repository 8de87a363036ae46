import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ACCESS_TOKEN, APP_ID, TestClock, createTestGateway, type TestGateway } from '../helpers/gateway'
import { sharedRedis } from '../helpers/redis'

const clock = new TestClock(1_800_000_000_000)
let gw: TestGateway
let accountId: string
beforeAll(async () => {
  gw = await createTestGateway({ rateLimits: true }, clock)
  accountId = (await gw.backend.control.getApp(APP_ID))!.accountId
  // a second account with an app and key of its own
  const c = gw.backend.control
  await c.createAccount({ id: 'other-acct', name: 'other', created: 0 })
  await c.createApp({
    id: 'otherapp',
    accountId: 'other-acct',
    name: 'o',
    status: 'enabled',
    tlsOnly: false,
    created: 0,
    modified: 0,
  })
  await c.createKey({
    appId: 'otherapp',
    id: 'k',
    name: 'k',
    secret: 'other-secret',
    capability: { '*': ['*'] },
    status: 0,
    revocableTokens: false,
    created: 0,
    modified: 0,
  })
})
afterAll(async () => {
  await gw.close()
})

const batch = (n: number, tag: string) => Array.from({ length: n }, (_, i) => ({ data: `${tag}${i}` }))
const publish = (channel: string, json: unknown, key?: string) =>
  gw.request(`/channels/${channel}/messages`, { method: 'POST', json, key })
const count = async (channel: string, key?: string) =>
  ((await (await gw.request(`/channels/${channel}/messages?limit=1000`, { key })).json()) as unknown[]).length
const expect429 = async (r: Response) => {
  expect(r.status).toBe(429)
  expect(Number(r.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
  expect(((await r.json()) as any).error).toMatchObject({ code: 42910, statusCode: 429 })
}

describe('message publish: 2,000 messages/s per account', () => {
  test('the burst is admitted, the next publish is refused whole and nothing of it is stored', async () => {
    clock.advance(10_000)
    for (let i = 0; i < 20; i++) expect((await publish('rl-a', batch(100, `b${i}-`))).status).toBe(201)
    const over = await publish('rl-a', { data: 'one too many' })
    expect([over.headers.get('x-ratelimit-limit'), over.headers.get('x-ratelimit-remaining')]).toEqual(['2000', '0'])
    await expect429(over)
    clock.advance(50) // 100 messages of budget come back
    await expect429(await publish('rl-a', batch(101, 'x')))
    expect((await publish('rl-a', batch(100, 'y'))).status).toBe(201)
    await expect429(await publish('rl-a', { data: 'z' }))
    gw.core.stats.flush()
    // history queries have a budget of their own (50/s): these two reads pass
    clock.advance(10_000)
    expect(await count('rl-a')).toBe(1000)
  })
  test('batch publish counts every message on every channel and is refused whole', async () => {
    clock.advance(10_000)
    const r = await gw.request('/messages', {
      method: 'POST',
      json: { channels: ['rl-b1', 'rl-b2'], messages: batch(600, 'm') },
    })
    expect(r.status).toBe(201)
    await expect429(
      await gw.request('/messages', {
        method: 'POST',
        json: { channels: ['rl-b1', 'rl-b2', 'rl-b3'], messages: batch(300, 'n') },
      }),
    )
    expect(await count('rl-b3')).toBe(0)
    await expect429(
      await gw.request('/messages', {
        method: 'POST',
        json: { channels: ['rl-b1'], messages: batch(1001, 'n').slice(0, 1000) },
      }),
    )
    // channel publishes spend the same budget: 800 of the 2,000 are left
    await expect429(await publish('rl-b4', batch(801, 'c')))
    expect((await publish('rl-b4', batch(800, 'c'))).status).toBe(201)
    await expect429(await publish('rl-b4', { data: 'c' }))
    expect(await count('rl-b4')).toBe(800)
  })
  test('a steady 2,000/s always passes; 2,100/s is trimmed to 2,000/s', async () => {
    const admitted = async (perSecond: number, seconds: number) => {
      clock.advance(10_000)
      let ok = 0
      for (let i = 0; i < perSecond * seconds; i++) {
        clock.advance(1000 / perSecond)
        try {
          await gw.core.limits.take(accountId, 'messages', 1)
          ok++
        } catch {
          /* refused */
        }
      }
      return ok
    }
    expect(await admitted(2000, 3)).toBe(6000)
    const trimmed = await admitted(2100, 30)
    // 63,000 attempts: the full bucket (2,000) plus 2,000/s for 30 s pass (within 0.1%: the
    // simulated clock steps by 1000/2100 ms, which floating point rounds)
    expect(Math.abs(trimmed - 62_000)).toBeLessThanOrEqual(62)
  })
  test('two accounts do not affect each other', async () => {
    clock.advance(10_000)
    for (let i = 0; i < 2; i++) expect((await publish('rl-c', batch(1000, `a${i}`))).status).toBe(201)
    await expect429(await publish('rl-c', { data: 'a' }))
    expect((await publish('rl-c', batch(1000, 'o'), 'otherapp.k:other-secret')).status).toBe(201)
  })
})

describe('other limit classes', () => {
  test('history 50/s (messages and presence history share it), token requests 50/s', async () => {
    clock.advance(10_000)
    for (let i = 0; i < 25; i++) expect((await gw.request('/channels/h/messages')).status).toBe(200)
    for (let i = 0; i < 25; i++) expect((await gw.request('/channels/h/presence/history')).status).toBe(200)
    await expect429(await gw.request('/channels/h/presence/history'))
    await expect429(await gw.request('/channels/h/messages'))
    for (let i = 0; i < 50; i++)
      expect((await gw.request(`/keys/${APP_ID}.rootkey/requestToken`, { method: 'POST', json: {} })).status).toBe(200)
    await expect429(await gw.request(`/keys/${APP_ID}.rootkey/requestToken`, { method: 'POST', json: {} }))
  })
  test('management: 100/min standard, 20/min statistics', async () => {
    clock.advance(120_000)
    const v1 = (path: string) =>
      gw.request(`/v1${path}`, { key: null, headers: { authorization: `Bearer ${ACCESS_TOKEN}` } })
    for (let i = 0; i < 20; i++) expect((await v1(`/apps/${APP_ID}/stats`)).status).toBe(200)
    await expect429(await v1(`/apps/${APP_ID}/stats`))
    for (let i = 0; i < 100; i++) expect((await v1('/me')).status).toBe(200)
    await expect429(await v1('/me'))
    clock.advance(700) // a request comes back every 600 ms
    expect((await v1('/me')).status).toBe(200)
  })
  test('LiveObjects classes: 50 reads/s, 2,000 writes/s', async () => {
    clock.advance(10_000)
    for (let i = 0; i < 50; i++) await gw.core.limits.take(accountId, 'objectReads')
    expect(gw.core.limits.take(accountId, 'objectReads')).rejects.toMatchObject({ code: 42910 })
    await gw.core.limits.take(accountId, 'objectWrites', 2000)
    expect(gw.core.limits.take(accountId, 'objectWrites')).rejects.toMatchObject({ code: 42910 })
  })
  test('per-account overrides through the management interface', async () => {
    clock.advance(120_000)
    const patch = (json: unknown) =>
      gw.request(`/v1/accounts/${accountId}/limits`, {
        method: 'PATCH',
        json,
        key: null,
        headers: { authorization: `Bearer ${ACCESS_TOKEN}` },
      })
    const r = await patch({ messages: 10 })
    expect(r.status).toBe(200)
    expect(((await r.json()) as any).messages).toMatchObject({ default: 2000, override: 10, effective: 10 })
    clock.advance(10_000)
    expect((await publish('rl-o', batch(10, 'o'))).status).toBe(201)
    await expect429(await publish('rl-o', { data: 'x' }))
    // more than the whole bucket in one request can never pass
    const tooBig = await publish('rl-o', batch(11, 'big'))
    expect(tooBig.headers.get('x-ratelimit-limit')).toBe('10')
    await expect429(tooBig)
    expect((await patch({ messages: null })).status).toBe(200)
    expect((await patch({ nope: 5 })).status).toBe(400)
    expect((await patch({ history: -1 })).status).toBe(400)
    clock.advance(10_000)
    expect((await publish('rl-o', batch(1000, 'p'))).status).toBe(201)
  })
})

test('RATE_LIMITS=off disables every limit', async () => {
  const open = await createTestGateway({ rateLimits: false }, clock)
  try {
    for (let i = 0; i < 3; i++)
      expect((await open.request('/channels/x/messages', { method: 'POST', json: batch(1000, 'f') })).status).toBe(201)
  } finally {
    await open.close()
  }
})

test('on Redis the budget is shared by all nodes', async () => {
  const redis = await sharedRedis()
  const shared = { rateLimits: true, redisUrl: redis.url, redisPrefix: `rl-${Date.now()}:` }
  const a = await createTestGateway(shared, clock)
  const b = await createTestGateway(shared, clock)
  try {
    clock.advance(10_000)
    expect((await a.request('/channels/n/messages', { method: 'POST', json: batch(1000, 'a') })).status).toBe(201)
    expect((await b.request('/channels/n/messages', { method: 'POST', json: batch(1000, 'b') })).status).toBe(201)
    expect((await a.request('/channels/n/messages', { method: 'POST', json: { data: 'over' } })).status).toBe(429)
    expect((await b.request('/channels/n/messages', { method: 'POST', json: { data: 'over' } })).status).toBe(429)
  } finally {
    await a.close()
    await b.close()
  }
})

test('LiveObjects reads and writes are limited per account through their routes', async () => {
  clock.advance(10_000)
  for (let i = 0; i < 50; i++)
    expect((await gw.request('/liveobjects/rlns/objects/o1', { method: 'PATCH', json: { data: { i } } })).status).toBe(
      200,
    )
  for (let i = 0; i < 50; i++) expect((await gw.request('/liveobjects/rlns/objects/o1')).status).toBe(200)
  const r = await gw.request('/liveobjects/rlns/objects/o1')
  expect(r.status).toBe(429)
  expect(((await r.json()) as any).error.code).toBe(42910)
})
