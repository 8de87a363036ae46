/**
 * What the allocator's purge delay (MEMORY_PURGE_DELAY_MS) costs a publishing node: the realtime
 * publisher of `bench/run.ts realtime-publish` paced at `--rate` messages/s in all (default
 * 40,000; 50 connections × 4 lanes, 100-byte messages) against a fresh embedded gateway per run,
 * one run per delay (`--delays`, default -1,10,1000,60000; 10 is Bun's own), alternated over
 * `--rounds` (default 2), forwards then backwards. Reports per run: the node's CPU per message
 * (main thread / other threads), its minor page faults per second, its RSS at the end, and the
 * CPU seconds of its named threads over 5 s of the window (the allocator's `mi-scavenger`,
 * JavaScriptCore's `JSCWarmUp`, which faults in fresh heap blocks, `HeapHelper`, `JITWorker`).
 * `--bare` adds the bare WebSocket server with Bun's defaults and with MIMALLOC_PURGE_DELAY=-1.
 * Linux only (/proc). `bun bench/purge-delay.ts [--delays -1,10] [--rounds 2] [--rate 40000] [--bare]`
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseFlags } from './lib/args'
import { minorFaults, secondsByThreadName } from './lib/cpu'
import { startDeployment } from './lib/deployment'
import { rssBytes } from './lib/memory'
import type { RunOptions } from './lib/scenario'
import { BENCH_KEY, startBaseline, type Target } from './lib/targets'
import { realtimeRun } from './scenarios/realtime-publish'

const f = parseFlags(process.argv.slice(2), {
  delays: 'string',
  rounds: 'number',
  rate: 'number',
  bare: 'boolean',
})
const outDir = mkdtempSync(join(tmpdir(), 'purge-delay-'))
const o = { seconds: 8, warmup: 3, connections: 50, pipeline: 4, outDir } as RunOptions
const rate = f.rate ?? 40_000
const delays = (f.delays ?? '-1,10,1000,60000').split(',').map((d) => d.trim())
const variants: Array<{ name: string; env: Record<string, string>; bare: boolean }> = [
  ...delays.map((d) => ({ name: `gateway, delay ${d}`, env: { MEMORY_PURGE_DELAY_MS: d }, bare: false })),
  ...(f.bare
    ? [
        { name: 'bare, Bun defaults', env: {}, bare: true },
        { name: 'bare, MIMALLOC_PURGE_DELAY=-1', env: { MIMALLOC_PURGE_DELAY: '-1' }, bare: true },
      ]
    : []),
]
const THREADS = ['mi-scavenger', 'JSCWarmUp', 'HeapHelper', 'JITWorker']

/** Faults and named threads over 5 s of the measured window (which starts after the warm-up). */
async function threadWindow(pid: number) {
  await Bun.sleep((o.warmup + 1) * 1000)
  const [t0, f0] = [secondsByThreadName(pid), minorFaults(pid)]
  await Bun.sleep(5000)
  const [t1, f1] = [secondsByThreadName(pid), minorFaults(pid)]
  const threads = THREADS.map((n) => `${n} ${(((t1.get(n) ?? 0) - (t0.get(n) ?? 0)) / 5).toFixed(2)}`).join(', ')
  return { faultsPerSec: (f1 - f0) / 5, threads }
}

const rows: string[] = []
for (let round = 1; round <= (f.rounds ?? 2); round++)
  for (const v of round % 2 ? variants : variants.slice().reverse()) {
    let target: Target & { key: string }
    let stop: () => Promise<void>
    if (v.bare) {
      const b = await startBaseline(outDir, v.env)
      target = { ...b, key: BENCH_KEY }
      stop = () => b.stop()
    } else {
      const d = await startDeployment('memory', { logDir: outDir, name: 'gateway', env: v.env })
      target = d.publishTo
      stop = () => d.stop()
    }
    try {
      const window = threadWindow(target.pid)
      const r = await realtimeRun(o, target, `${v.name}, round ${round}`, rate)
      const w = await window
      const run = r.run
      const line =
        `round ${round}  ${v.name.padEnd(32)} ${run.nodeUsPerMessage.toFixed(1)} us/msg ` +
        `(main ${run.mainUsPerMessage?.toFixed(1)}, other threads ${run.otherThreadsUsPerMessage?.toFixed(1)}), ` +
        `${w.faultsPerSec.toFixed(0)} faults/s, RSS ${((rssBytes(target.pid) ?? NaN) / 2 ** 20).toFixed(0)} MiB; cores: ${w.threads}` +
        (r.checks.every((c) => c.ok) ? '' : '  (NOT every message acknowledged)')
      console.log(line)
      rows.push(line)
    } finally {
      await stop()
    }
  }
console.log(`\n${rows.join('\n')}`)
process.exit(0)
