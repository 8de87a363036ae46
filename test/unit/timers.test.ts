/** The runtime's timers as the core gets them (lib/clock.ts): any delay, a cancel that holds. */
import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
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

test('soon: after this turn, in order; what is handed meanwhile waits a turn', async () => {
  const ran: string[] = []
  systemTimers.soon(() => ran.push('a'))
  systemTimers.soon(() => {
    ran.push('b')
    systemTimers.soon(() => ran.push('handed while running'))
  })
  systemTimers.soon(() => ran.push('c'))
  ran.push('this turn')
  await new Promise<void>((resolve) => setImmediate(resolve))
  expect(ran).toEqual(['this turn', 'a', 'b', 'c'])
  await new Promise<void>((resolve) => setImmediate(resolve))
  expect(ran).toEqual(['this turn', 'a', 'b', 'c', 'handed while running'])
})

test('soon: one that throws is uncaught, and the ones after it still run, before those handed later', () => {
  // in a process of its own: the test runner takes an uncaught error as the test's failure
  const dir = mkdtempSync(join(tmpdir(), 'soon-'))
  const script = join(dir, 'soon.ts')
  writeFileSync(
    script,
    `import { systemTimers } from ${JSON.stringify(join(import.meta.dir, '../../src/lib/clock.ts'))}
const ran: string[] = []
process.on('uncaughtException', (e) => ran.push('uncaught: ' + e.message))
systemTimers.soon(() => ran.push('a'))
systemTimers.soon(() => {
  systemTimers.soon(() => ran.push('later'))
  throw new Error('b failed')
})
systemTimers.soon(() => ran.push('c'))
setTimeout(() => console.log(JSON.stringify(ran)), 50)
`,
  )
  try {
    const r = Bun.spawnSync([process.execPath, script])
    expect(r.exitCode).toBe(0)
    expect(JSON.parse(r.stdout.toString())).toEqual(['a', 'uncaught: b failed', 'c', 'later'])
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})
