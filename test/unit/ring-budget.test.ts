import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Broker, PublishOptions } from '../../src/core/ports'
import type { MessageDraft } from '../../src/core/types'
import { createTestGateway, type TestGateway } from '../helpers/gateway'

// RING_TOTAL_MAX_BYTES on the embedded broker: all channels' rings together stay near the cap by
// giving up what RESUME_WINDOW_MS keeps beyond RING_SIZE; what RING_SIZE keeps is never shed.
const CAP = 1 << 20
const RING_SIZE = 16
let gw: TestGateway
let broker: Broker
const APP = 'budget-app'
const plain: PublishOptions = { persisted: false }
beforeAll(async () => {
  gw = await createTestGateway({
    ringSize: RING_SIZE,
    resumeWindowMs: 600_000,
    ringMaxBytes: 64 << 20,
    ringTotalMaxBytes: CAP,
  })
  broker = gw.backend.broker
})
afterAll(async () => {
  await gw.close()
})

const KB = 'x'.repeat(1000)
let n = 0
const drafts = (count: number): MessageDraft[] => Array.from({ length: count }, () => ({ id: `m${n++}`, data: KB }))
const held = async (ch: string) => (await broker.history(APP, ch, { limit: 1000, direction: 'forwards' }, plain)).length
const bytes = () => broker.memory!().bytes

describe.skipIf(process.env.TEST_BACKEND === 'redis')('rings over RING_TOTAL_MAX_BYTES (embedded)', () => {
  test('under the cap the window keeps everything; past it the channel published to sheds its extra first', async () => {
    for (let i = 0; i < 5; i++) await broker.publish(APP, 'small', drafts(100), plain)
    expect(await held('small')).toBe(500) // ~0.5 MB: all of it, far beyond RING_SIZE
    for (let i = 0; i < 20; i++) await broker.publish(APP, 'big', drafts(50), plain)
    // 'big' alone went over the cap: it shed its own extra, 'small' kept its window
    expect(bytes()).toBeLessThanOrEqual(CAP)
    expect(await held('small')).toBe(500)
    const big = await held('big')
    expect(big).toBeGreaterThanOrEqual(RING_SIZE)
    expect(big).toBeLessThan(1000)
  })

  test('when the channel published to holds only its minimum, the largest others shed theirs; RING_SIZE stays', async () => {
    const before = { small: await held('small'), big: await held('big') }
    const largest = before.small >= before.big ? 'small' : 'big'
    // fresh channels of exactly RING_SIZE messages: nothing of their own to shed
    const fresh = Array.from({ length: 40 }, (_, i) => `fresh-${i}`)
    for (const ch of fresh) await broker.publish(APP, ch, drafts(RING_SIZE), plain)
    expect(bytes()).toBeLessThanOrEqual(CAP)
    for (const ch of ['small', 'big', ...fresh]) expect(await held(ch)).toBeGreaterThanOrEqual(RING_SIZE)
    expect(await held(largest)).toBe(RING_SIZE)
  })
})
