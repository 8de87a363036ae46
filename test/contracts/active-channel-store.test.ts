import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { ActiveChannelStore } from '../../src/core/ports'
import { createTestGateway, type TestGateway } from '../helpers/gateway'

// The ActiveChannelStore port's contract (core/ports.ts), held against whichever backend
// TEST_BACKEND names: `npm test` runs this file on the embedded store, on Redis and on a cluster.
let gw: TestGateway
let store: ActiveChannelStore
beforeAll(async () => {
  gw = await createTestGateway()
  store = gw.backend.activeChannels
})
afterAll(async () => {
  await gw.close()
})

let n = 0
const account = () => `acct-${Date.now()}-${n++}`
const STALE = 30_000
const T = 1_700_000_000_000

describe('ActiveChannelStore contract', () => {
  test('added, then known; full past the bound (nothing recorded); has() reads without recording', async () => {
    const a = account()
    expect(await store.has(a, 'app:x', T, STALE)).toBe(false)
    expect(await store.add(a, 'app:x', T, 2, STALE)).toBe('added')
    expect(await store.add(a, 'app:x', T + 1, 2, STALE)).toBe('known')
    expect(await store.add(a, 'app:y', T + 2, 2, STALE)).toBe('added')
    expect(await store.add(a, 'app:z', T + 3, 2, STALE)).toBe('full')
    expect(await store.has(a, 'app:z', T + 3, STALE)).toBe(false)
    expect(await store.add(a, 'app:x', T + 4, 2, STALE)).toBe('known')
    // 0: no bound
    expect(await store.add(a, 'app:z', T + 5, 0, STALE)).toBe('added')
  })

  test('accounts are apart', async () => {
    const [a, b] = [account(), account()]
    expect(await store.add(a, 'app:x', T, 1, STALE)).toBe('added')
    expect(await store.has(b, 'app:x', T, STALE)).toBe(false)
    expect(await store.add(b, 'app:y', T, 1, STALE)).toBe('added')
  })

  test('a member not named within staleMs no longer counts; touch() names members again', async () => {
    const a = account()
    expect(await store.add(a, 'app:x', T, 2, STALE)).toBe('added')
    expect(await store.add(a, 'app:y', T, 2, STALE)).toBe('added')
    await store.touch(a, ['app:x'], T + 20_000, STALE)
    // at T + 40 s: y (named at T) is stale, x (named at T + 20 s) is not
    expect(await store.has(a, 'app:y', T + 40_000, STALE)).toBe(false)
    expect(await store.has(a, 'app:x', T + 40_000, STALE)).toBe(true)
    expect(await store.add(a, 'app:z', T + 40_000, 2, STALE)).toBe('added')
    expect(await store.add(a, 'app:w', T + 40_000, 2, STALE)).toBe('full')
    // a time earlier than the member's own does not take it back (a node whose clock is behind)
    await store.touch(a, ['app:x'], T, STALE)
    expect(await store.has(a, 'app:x', T + 45_000, STALE)).toBe(true)
  })
})
