import { afterAll, beforeAll, expect, test } from 'bun:test'
import { OBJECT_HISTORY_MAX } from '../../src/core/objects/ports'
import { TestClock, createTestGateway, type TestGateway } from '../helpers/gateway'
import { getJson, NO_LIMITS, objPath, patchOk } from './util'

/** History is bounded: at most OBJECT_HISTORY_MAX changes per object, none older than the retention window. */
const clock = new TestClock()
let gw: TestGateway
beforeAll(async () => {
  gw = await createTestGateway({ ...NO_LIMITS, persistedHistoryTtlMs: 60_000 }, clock)
})
afterAll(async () => {
  await gw.close()
})

test('changes older than the retention window are dropped; the state is kept', async () => {
  for (let i = 0; i < 3; i++) await patchOk(gw, 'ret', 'old', { i })
  clock.advance(61_000)
  const latest = await patchOk(gw, 'ret', 'old', { i: 3 })
  const history = (await getJson(gw, objPath('ret', 'old', '/history'))) as any[]
  expect(history.map((c) => c.version)).toEqual([latest.version])
  expect((await getJson(gw, objPath('ret', 'old'))).data).toEqual({ i: 3 })
})

test(`at most ${OBJECT_HISTORY_MAX} changes are kept per object, the newest`, async () => {
  const total = OBJECT_HISTORY_MAX + 20
  const versions: string[] = []
  for (let i = 0; i < total; i += 50) {
    const batch = await Promise.all(
      Array.from({ length: Math.min(50, total - i) }, (_, j) => patchOk(gw, 'ret', 'busy', { [`k${i + j}`]: 1 })),
    )
    versions.push(...batch.map((s) => s.version))
  }
  const history = (await getJson(gw, objPath('ret', 'busy', '/history?limit=1000'))) as any[]
  expect(history).toHaveLength(OBJECT_HISTORY_MAX)
  const kept = new Set(history.map((c) => c.version))
  const newest = (await getJson(gw, objPath('ret', 'busy'))).version
  expect(kept.has(newest)).toBe(true)
  // the oldest are gone: the earliest kept change's state already holds the first 20 updates
  expect(Object.keys(history[history.length - 1].data).length).toBe(21)
  expect(versions.filter((v) => kept.has(v))).toHaveLength(OBJECT_HISTORY_MAX)
})
