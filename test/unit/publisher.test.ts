import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Principal } from '../../src/core/auth/principal'
import { basic, createTestGateway, type TestGateway } from '../helpers/gateway'

/**
 * The publisher's one entry (core/channels/publisher.ts) on the embedded backend: a publish is
 * answered with its value, not a promise, once nothing on the way waits (rate limits off or the
 * account's limits known, the namespace's rules cached). The realtime transport's publishes take that path (a measured hot
 * path); REST publishes get the same answer.
 */
let gw: TestGateway
let p: Principal
beforeAll(async () => {
  // an empty REDIS_URL: the embedded backend, whatever TEST_BACKEND says
  gw = await createTestGateway({ redisUrl: '' })
  p = await gw.core.auth.authenticate({ authorization: basic(gw.key), secure: () => false })
})
afterAll(() => gw.close())

const isThenable = (x: unknown) => typeof (x as { then?: unknown } | null)?.then === 'function'

test('the embedded backend answers a publish without a promise', async () => {
  expect(gw.core.backendKind).toBe('memory')
  // the first publish of an app loads its namespace rules (a promise); the next ones find them cached
  await gw.core.publisher.publish(p, 'sync-first', { data: 'warm' })
  const realtime = gw.core.publisher.publish(p, 'sync-rt', [{ data: 'a' }, { data: 'b' }], {
    connectionId: 'conn1',
    msgSerial: 7,
  })
  expect(isThenable(realtime)).toBe(false)
  expect(realtime).toMatchObject({ channel: 'sync-rt', messageId: 'conn1:7' })
  const rest = gw.core.publisher.publish(p, 'sync-rest', { name: 'n', data: 'c' })
  expect(isThenable(rest)).toBe(false)
  const history = await gw.core.channels.history(p, 'sync-rt', { direction: 'forwards', limit: 10 })
  expect(history.map((m) => [m.id, m.data, m.serial])).toEqual([
    ['conn1:7:0', 'a', (realtime as { serials: string[] }).serials[0]],
    ['conn1:7:1', 'b', (realtime as { serials: string[] }).serials[1]],
  ])
})

test('a refused publish is thrown at once, not a rejected promise', () => {
  expect(() => gw.core.publisher.publish(p, 'sync-rt', [])).toThrow('no messages')
})

test("with rate limits on, too: charged at once once the account's limits are known, and refused at once over the bucket", async () => {
  const limited = await createTestGateway({
    redisUrl: '',
    rateLimits: true,
    limitMessagesPerSecond: 5,
    rateLimitBurstSeconds: 1,
  })
  try {
    const q = await limited.core.auth.authenticate({ authorization: basic(limited.key), secure: () => false })
    // the account's first charge reads its limits (a promise); the next ones are made at once
    await limited.core.publisher.publish(q, 'rated', { data: 'first' })
    const second = limited.core.publisher.publish(q, 'rated', [{ data: 'a' }, { data: 'b' }])
    expect(isThenable(second)).toBe(false)
    expect((second as { serials: string[] }).serials).toHaveLength(2)
    // 3 of 5 taken: 2 left, so 3 more are refused whole, at once
    expect(() => limited.core.publisher.publish(q, 'rated', [{ data: 'c' }, { data: 'd' }, { data: 'e' }])).toThrow(
      'Rate limit exceeded',
    )
    // more than the whole bucket in one publish: refused before any charge is taken
    expect(() =>
      limited.core.publisher.publish(
        q,
        'rated',
        Array.from({ length: 6 }, () => ({ data: 'x' })),
      ),
    ).toThrow('more than the burst')
    const history = await limited.core.channels.history(q, 'rated', { direction: 'forwards', limit: 10 })
    expect(history.map((m) => m.data)).toEqual(['first', 'a', 'b'])
  } finally {
    await limited.close()
  }
})
