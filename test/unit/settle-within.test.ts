import { expect, test } from 'bun:test'
import { settleWithin, sleep } from '../../src/lib/sleep'

const late = (ms: number) => new Error(`late after ${ms}`)

test('a promise that settles in time passes through: its value, or its own error', async () => {
  expect(await settleWithin(Promise.resolve(7), 1000, late)).toBe(7)
  expect(
    await settleWithin(
      sleep(30).then(() => 'later'),
      1000,
      late,
    ),
  ).toBe('later')
  const own = new Error('own')
  await expect(settleWithin(Promise.reject(own), 1000, late)).rejects.toBe(own)
  await expect(
    settleWithin(
      sleep(30).then(() => Promise.reject(own)),
      1000,
      late,
    ),
  ).rejects.toBe(own)
})

test('a promise still pending at its deadline is refused with timedOut(ms), and settling later changes nothing', async () => {
  let settle!: (v: string) => void
  const never = new Promise<string>((r) => (settle = r))
  const t0 = performance.now()
  const err = await settleWithin(never, 60, late).catch((e: unknown) => e)
  expect(err).toEqual(late(60))
  // not before the deadline
  expect(performance.now() - t0).toBeGreaterThanOrEqual(59)
  settle('too late')
})

test('deadlines held at once fire each on its own time; the settled ones among them do not', async () => {
  const outcomes: string[] = []
  const track = (name: string, p: Promise<unknown>) =>
    p.then(
      () => outcomes.push(`${name} ok`),
      (e: Error) => outcomes.push(`${name} ${e.message}`),
    )
  await Promise.all([
    track('quick', settleWithin(sleep(10), 200, late)),
    track('short', settleWithin(new Promise(() => {}), 40, late)),
    track('long', settleWithin(new Promise(() => {}), 150, late)),
    // settles while later sweeps still run (it is held past the first one)
    track('slow', settleWithin(sleep(100), 400, late)),
  ])
  expect(outcomes).toEqual(['quick ok', 'short late after 40', 'slow ok', 'long late after 150'])
})
