import { afterAll, describe, expect, test } from 'bun:test'
import { MemoryRateLimitStore } from '../../src/backend/memory/rate-limit-store'
import { connectFastSender } from '../../src/backend/redis/clients'
import { RedisKeys } from '../../src/backend/redis/keys'
import { RedisRateLimitStore } from '../../src/backend/redis/rate-limit-store'
import type { RateLimitStore } from '../../src/core/ports'
import type { Message } from '../../src/core/types'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { sharedRedis } from '../helpers/redis'

/** The RateLimitStore contract, on both backends (the Redis one through the publish path's client). */
const closers: Array<() => void> = []
afterAll(() => {
  for (const c of closers) c()
})

const backends: Array<[string, () => Promise<RateLimitStore>]> = [
  ['memory', async () => new MemoryRateLimitStore()],
  [
    'redis',
    async () => {
      const fast = await connectFastSender({ redisUrl: (await sharedRedis()).url, redisTimeoutMs: 2000 }, () => {})
      closers.push(fast.close)
      return new RedisRateLimitStore(fast.send, new RedisKeys(`rls-${Date.now()}:`), 2000)
    },
  ],
]

// 100 per second, a bucket of 50
const RATE = 100
const BURST = 50
const take = (s: RateLimitStore, key: string, cost: number, now: number) =>
  s.take({ key, cost, rate: RATE, burst: BURST, now })

describe.each(backends)('%s rate-limit store', (_, open) => {
  test('a new bucket holds the burst; a refused take takes nothing and says when it would pass', async () => {
    const s = await open()
    expect(await take(s, 'a', 30, 1000)).toMatchObject({ ok: true, remaining: 20 })
    const refused = await take(s, 'a', 25, 1000)
    expect(refused).toMatchObject({ ok: false, remaining: 20 })
    expect(refused.retryAfterMs).toBeCloseTo(50, 0) // 5 tokens at 100/s
    expect(await take(s, 'a', 20, 1000)).toMatchObject({ ok: true, remaining: 0 })
    // refills at the rate, never past the burst
    expect(await take(s, 'a', 10, 1100)).toMatchObject({ ok: true, remaining: 0 })
    expect(await take(s, 'a', 1, 1_000_000)).toMatchObject({ ok: true, remaining: BURST - 1 })
    // keys are independent
    expect(await take(s, 'b', BURST, 1000)).toMatchObject({ ok: true, remaining: 0 })
  })

  test('takes made at once are answered in the order made, each as if alone; buckets stay apart', async () => {
    const s = await open()
    // 80 takes of one token at once (no time passes): the first 50 pass, counting the bucket down
    const burst = await Promise.all(Array.from({ length: 80 }, () => take(s, 'rush', 1, 5000)))
    expect(burst.slice(0, BURST)).toEqual(
      Array.from({ length: BURST }, (_, i) => ({ ok: true, remaining: BURST - 1 - i, retryAfterMs: 0 })),
    )
    for (const r of burst.slice(BURST)) expect(r).toMatchObject({ ok: false, remaining: 0, retryAfterMs: 10 })
    // interleaved with another bucket's, and with a later time that refills 20 tokens
    const mixed = await Promise.all([
      take(s, 'rush', 5, 5200),
      take(s, 'calm', 45, 5200),
      take(s, 'rush', 20, 5200),
      take(s, 'calm', 10, 5200),
    ])
    expect(mixed).toMatchObject([
      { ok: true, remaining: 15 },
      { ok: true, remaining: 5 },
      { ok: false, remaining: 15 },
      { ok: false, remaining: 5 },
    ])
  })

  test('nodes with skewed clocks taking turns cannot refill the same interval twice', async () => {
    const s = await open()
    // node A (clock ahead) empties the bucket at 10,000; node B's clock says 9,000
    expect((await take(s, 'skew', BURST, 10_000)).ok).toBe(true)
    expect((await take(s, 'skew', 1, 9_000)).ok).toBe(false)
    // back on node A, no time has passed: a bucket that took B's time would refill 50 tokens here
    const again = await take(s, 'skew', 1, 10_000)
    expect(again).toMatchObject({ ok: false, remaining: 0 })
    // time passing on the clock that is ahead still refills
    expect((await take(s, 'skew', 1, 10_010)).ok).toBe(true)
  })
})

test('the Redis store sends the takes of one bucket made while its call is in flight together, in one script call', async () => {
  const fast = await connectFastSender({ redisUrl: (await sharedRedis()).url, redisTimeoutMs: 2000 }, () => {})
  closers.push(fast.close)
  let calls = 0
  const counted: typeof fast.send = (args) => {
    calls++
    return fast.send(args)
  }
  const s = new RedisRateLimitStore(counted, new RedisKeys(`rlb-${Date.now()}:`), 2000)
  await take(s, 'warm', 1, 1000) // the script is loaded
  calls = 0
  const results = await Promise.all(Array.from({ length: 200 }, (_, i) => take(s, i % 2 ? 'odd' : 'even', 1, 1000)))
  expect(results.filter((r) => r.ok).length).toBe(2 * BURST)
  // one call per bucket: made in one turn, each bucket's takes go together
  expect(calls).toBe(2)
})

test('the memory store stays bounded by the buckets in use and never forgets one still short of tokens', async () => {
  const s = new MemoryRateLimitStore()
  expect((await take(s, 'busy', BURST, 0)).ok).toBe(true)
  // 100,000 one-off accounts over 100 s: each bucket is full again 10 ms after it was used
  for (let i = 0; i < 100_000; i++) await take(s, `once-${i}`, 1, i)
  expect(s.size).toBeLessThan(25_000)
  // 'busy' was swept as soon as it had refilled: gone or not, it now holds the whole burst
  expect(await take(s, 'busy', BURST, 100_000)).toMatchObject({ ok: true, remaining: 0 })
  // an empty bucket survives any number of sweeps until it has refilled
  for (let i = 0; i < 50_000; i++) await take(s, `more-${i}`, 1, 100_000)
  expect((await take(s, 'busy', 1, 100_000)).ok).toBe(false)
})

/** The charge a broker publish takes in the same step as its append, on both backends. */
const gateways: Array<[string, () => Promise<TestGateway>]> = [
  ['memory', () => createTestGateway({ redisUrl: '' })],
  [
    'redis',
    async () => createTestGateway({ redisUrl: (await sharedRedis()).url, redisPrefix: `charge-${Date.now()}:` }),
  ],
]

describe.each(gateways)('%s broker: publish with a rate-limit charge', (_, open) => {
  test('shares its bucket with plain takes; a refused publish appends and delivers nothing', async () => {
    const gw = await open()
    try {
      const { broker, limits } = gw.backend
      const delivered: Message[] = []
      const unsubscribe = broker.subscribe('app', 'ch', (_a, _c, ms) => delivered.push(...ms))
      await broker.position('app', 'ch') // the subscription is in place
      const charge = (cost: number) => ({ key: 'acct:messages', cost, rate: RATE, burst: BURST, now: 1000 })
      const drafts = (n: number, tag: string) =>
        Array.from({ length: n }, (_, i) => ({ id: `${tag}:${i}`, data: `${tag}${i}` }))

      const granted = await broker.publish('app', 'ch', drafts(30, 'a'), { persisted: false, charge: charge(30) })
      expect(granted).toMatchObject({ appended: 30, charged: { ok: true, remaining: 20 } })
      expect(granted.serials.length).toBe(30)
      expect(await limits.take(charge(15))).toMatchObject({ ok: true, remaining: 5 })
      const refused = await broker.publish('app', 'ch', drafts(6, 'r'), { persisted: false, charge: charge(6) })
      expect(refused).toMatchObject({ appended: 0, serials: [], charged: { ok: false, remaining: 5 } })
      expect(refused.charged!.retryAfterMs).toBeCloseTo(10, 0) // 1 token at 100/s
      expect(
        (await broker.publish('app', 'ch', drafts(5, 'b'), { persisted: false, charge: charge(5) })).charged,
      ).toMatchObject({ ok: true })

      // delivery is in order: once the last message is here, anything of the refused one would be too
      for (let i = 0; delivered.length < 35 && i < 200; i++) await Bun.sleep(10)
      expect(delivered.map((m) => m.data)).toEqual([...drafts(30, 'a'), ...drafts(5, 'b')].map((d) => d.data))
      const history = await broker.history('app', 'ch', { limit: 100, direction: 'forwards' }, { persisted: false })
      expect(history.map((m) => m.data)).toEqual(delivered.map((m) => m.data))
      unsubscribe()
    } finally {
      await gw.close()
    }
  })
})
