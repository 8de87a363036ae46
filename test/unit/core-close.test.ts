import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createCore } from '../../src/core'
import { systemClock, type Timers } from '../../src/lib/clock'
import { basic, createTestGateway, type TestGateway } from '../helpers/gateway'

/**
 * `Core.close()` stops what the core's services scheduled (core/index.ts): a node stops them in
 * one call (node.ts), whatever services set timers. Checked on a core of its own, built on a test
 * gateway's backend with timers that count what is still set.
 */
let gw: TestGateway
beforeAll(async () => {
  gw = await createTestGateway()
})
afterAll(() => gw.close())

/** Timers that never fire by themselves and know which are still set. */
function countingTimers() {
  const live = new Set<object>()
  const set = () => {
    const t = {}
    live.add(t)
    return () => void live.delete(t)
  }
  const timers: Timers = { after: set, every: set, soon: (fn) => void setImmediate(fn) }
  return { timers, live }
}

test('Core.close() cancels every timer its services set (typing, occupancy events, presence reaper)', async () => {
  const { timers, live } = countingTimers()
  const core = createCore(gw.backend, systemClock, timers, gw.config)
  const p = await core.auth.authenticate({ authorization: basic(gw.key), secure: () => false })
  // a typing indicator holds a timer until it expires
  await core.chat.typing.set(p, 'close-room', { clientId: 'amy', isTyping: true })
  // an attachment asking for occupancy events polls the cluster's counts
  core.occupancyEvents.watch(p.appId, 'close-occupancy', { occupancy: () => {} })
  expect(live.size).toBeGreaterThanOrEqual(2)
  core.close()
  expect(live.size).toBe(0)
})
