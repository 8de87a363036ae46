/** The runtime's timers as the core gets them (lib/clock.ts): any delay, a cancel that holds. */
import { expect, test } from 'bun:test'
import { MAX_TIMER_MS, systemTimers } from '../../src/lib/clock'

test('a delay past the runtime limit (2^31-1 ms) does not fire at once; one within it fires; cancel holds', async () => {
  const fired: string[] = []
  const cancels = [
    systemTimers.after(MAX_TIMER_MS + 1, () => fired.push('past the limit')),
    systemTimers.after(30 * 86_400_000, () => fired.push('30 days')),
    systemTimers.after(Infinity, () => fired.push('never')),
  ]
  const cancelled = systemTimers.after(5, () => fired.push('cancelled'))
  cancelled()
  await new Promise<void>((resolve) => systemTimers.after(50, resolve))
  expect(fired).toEqual([])
  for (const c of cancels) c()
})
