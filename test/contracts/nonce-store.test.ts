import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { MarkStore, NonceStore } from '../../src/core/ports'
import { MemoryMarkStore } from '../../src/backend/memory/mark-store'
import { MemoryNonceStore } from '../../src/backend/memory/nonce-store'
import { createTestGateway, TestClock, type TestGateway } from '../helpers/gateway'

// The NonceStore and MarkStore ports' contracts (core/ports.ts), held against whichever backend
// TEST_BACKEND names: `npm test` runs this file on the embedded store and again on Redis.
let gw: TestGateway
let store: NonceStore
let marks: MarkStore
beforeAll(async () => {
  gw = await createTestGateway()
  store = gw.backend.nonces
  marks = gw.backend.marks
})
afterAll(async () => {
  await gw.close()
})

let n = 0
const fresh = () => `nonce-${Date.now()}-${n++}`
const MAX = 1_000_000

describe('NonceStore contract', () => {
  test('a key is claimed once while it lives; has() sees it and records nothing itself', async () => {
    const s = fresh()
    const k = fresh()
    expect(await store.has(s, k)).toBe(false)
    expect(await store.has(s, k)).toBe(false)
    expect(await store.claim(s, k, 60_000, MAX)).toBe('claimed')
    expect(await store.has(s, k)).toBe(true)
    expect(await store.claim(s, k, 60_000, MAX)).toBe('seen')
    expect(await store.has(s, fresh())).toBe(false)
  })

  test('scopes are apart: the same key is claimed once in each', async () => {
    const [a, b, k] = [fresh(), fresh(), fresh()]
    expect(await store.claim(a, k, 60_000, MAX)).toBe('claimed')
    expect(await store.has(b, k)).toBe(false)
    expect(await store.claim(b, k, 60_000, MAX)).toBe('claimed')
    expect(await store.claim(a, k, 60_000, MAX)).toBe('seen')
  })

  test('a claim expires after its ttl: claimable again, not had', async () => {
    const s = fresh()
    const k = fresh()
    expect(await store.claim(s, k, 30, MAX)).toBe('claimed')
    await Bun.sleep(80)
    expect(await store.has(s, k)).toBe(false)
    expect(await store.claim(s, k, 30, MAX)).toBe('claimed')
  })

  test('a full scope refuses new keys and forgets none of its live ones; other scopes go on', async () => {
    const s = fresh()
    const live = [fresh(), fresh(), fresh()]
    for (const k of live) expect(await store.claim(s, k, 60_000, 3)).toBe('claimed')
    for (let i = 0; i < 5; i++) expect(await store.claim(s, fresh(), 60_000, 3)).toBe('scopeFull')
    for (const k of live) {
      expect(await store.has(s, k)).toBe(true)
      expect(await store.claim(s, k, 60_000, 3)).toBe('seen')
    }
    expect(await store.claim(fresh(), fresh(), 60_000, 3)).toBe('claimed')
  })

  test('a full scope has room again once its nonces expire', async () => {
    const s = fresh()
    expect(await store.claim(s, fresh(), 40, 2)).toBe('claimed')
    expect(await store.claim(s, fresh(), 40, 2)).toBe('claimed')
    expect(await store.claim(s, fresh(), 40, 2)).toBe('scopeFull')
    await Bun.sleep(100)
    expect(await store.claim(s, fresh(), 40, 2)).toBe('claimed')
  })
})

describe('MarkStore contract', () => {
  test('a mark is had until its ttl; has() records nothing', async () => {
    const k = fresh()
    expect(await marks.has(k)).toBe(false)
    expect(await marks.has(k)).toBe(false)
    await marks.add(fresh(), k, 60_000, MAX)
    expect(await marks.has(k)).toBe(true)
    const short = fresh()
    await marks.add(undefined, short, 30, MAX)
    expect(await marks.has(short)).toBe(true)
    await Bun.sleep(80)
    expect(await marks.has(short)).toBe(false)
  })

  test("past a scope's bound its oldest marks are forgotten, and only its own", async () => {
    const [s, other] = [fresh(), fresh()]
    const theirs = fresh()
    await marks.add(other, theirs, 60_000, 3)
    const mine = [fresh(), fresh(), fresh(), fresh(), fresh()]
    for (const k of mine) await marks.add(s, k, 60_000, 3)
    expect(await Promise.all(mine.map((k) => marks.has(k)))).toEqual([false, false, true, true, true])
    expect(await marks.has(theirs)).toBe(true)
  })

  test('marks are kept apart from nonces: no number of marks takes a nonce away', async () => {
    const s = fresh()
    const k = fresh()
    expect(await store.claim(s, k, 60_000, 1)).toBe('claimed')
    for (let i = 0; i < 50; i++) await marks.add(s, `${k}-${i}`, 60_000, 10)
    await marks.add(s, k, 60_000, 1)
    expect(await store.claim(s, k, 60_000, 1)).toBe('seen')
  })
})

describe('MemoryNonceStore', () => {
  test('is bounded in all without forgetting a live nonce: past the bound new claims are refused', async () => {
    const clock = new TestClock()
    const memory = new MemoryNonceStore(clock, 1_000)
    for (let i = 0; i < 1_000; i++) expect(await memory.claim(`s${i % 7}`, `k${i}`, 60_000, MAX)).toBe('claimed')
    expect(await memory.claim('s0', 'one-more', 60_000, MAX)).toBe('storeFull')
    expect(await memory.claim('another', 'one-more', 60_000, MAX)).toBe('storeFull')
    expect(await memory.has('s0', 'k0')).toBe(true)
    expect(await memory.claim('s0', 'k0', 60_000, MAX)).toBe('seen')
    // room again once nonces expire
    clock.advance(60_001)
    expect(await memory.claim('another', 'one-more', 60_000, MAX)).toBe('claimed')
    expect(await memory.has('s0', 'k0')).toBe(false)
  })

  test('the default bound is 200,000 live nonces', async () => {
    const memory = new MemoryNonceStore(new TestClock())
    for (let i = 0; i < 200_000; i++) await memory.claim(`s${i % 10}`, `k${i}`, 3_600_000, MAX)
    expect(await memory.claim('s0', 'k200000', 3_600_000, MAX)).toBe('storeFull')
    expect(await memory.has('s0', 'k0')).toBe(true)
  })
})

describe('MemoryMarkStore', () => {
  test('is bounded in all: past it the oldest recorded go first', async () => {
    const memory = new MemoryMarkStore(new TestClock(), 1_000)
    for (let i = 0; i < 1_001; i++) await memory.add(i % 2 ? 'a' : undefined, `k${i}`, 3_600_000, MAX)
    expect(await memory.has('k0')).toBe(false)
    expect(await memory.has('k1000')).toBe(true)
    expect((memory as unknown as { all: Map<string, unknown> }).all.size).toBeLessThanOrEqual(1_000)
  })
})
