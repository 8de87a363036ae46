import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { NonceStore } from '../../src/core/ports'
import { MemoryNonceStore } from '../../src/backend/memory/nonce-store'
import { createTestGateway, TestClock, type TestGateway } from '../helpers/gateway'

// The NonceStore port's contract (core/ports.ts), held against whichever backend TEST_BACKEND
// names: `npm test` runs this file on the embedded store and again on Redis.
let gw: TestGateway
let store: NonceStore
beforeAll(async () => {
  gw = await createTestGateway()
  store = gw.backend.nonces
})
afterAll(async () => {
  await gw.close()
})

let n = 0
const fresh = () => `nonce-${Date.now()}-${n++}`

describe('NonceStore contract', () => {
  test('a key is claimed once while it lives; has() sees it and records nothing itself', async () => {
    const k = fresh()
    expect(await store.has(k)).toBe(false)
    expect(await store.has(k)).toBe(false)
    expect(await store.claim(k, 60_000)).toBe(true)
    expect(await store.has(k)).toBe(true)
    expect(await store.claim(k, 60_000)).toBe(false)
    expect(await store.has(fresh())).toBe(false)
  })

  test('a claim expires after its ttl: claimable again, not had', async () => {
    const k = fresh()
    expect(await store.claim(k, 30)).toBe(true)
    await Bun.sleep(80)
    expect(await store.has(k)).toBe(false)
    expect(await store.claim(k, 30)).toBe(true)
  })
})

describe('MemoryNonceStore', () => {
  test('is bounded: past 200,000 live keys the oldest recorded go first', async () => {
    const clock = new TestClock()
    const memory = new MemoryNonceStore(clock)
    for (let i = 0; i < 200_001; i++) await memory.claim(`k${i}`, 3_600_000)
    expect(await memory.has('k0')).toBe(false)
    expect(await memory.has('k200000')).toBe(true)
    expect(await memory.has('k190000')).toBe(true)
    expect((memory as unknown as { seen: Map<string, number> }).seen.size).toBeLessThanOrEqual(200_000)
  })
})
