/**
 * Benchmark entry point: `bun bench/run.ts <scenario> [flags]`.
 *
 *   --seconds N       measured seconds per target (default 10; 3 with --short)
 *   --warmup N        unmeasured seconds before that (default 2; 0.5 with --short)
 *   --connections N   concurrent keep-alive connections (default 50)
 *   --pipeline N      requests in flight per connection (default 4)
 *   --short           CI smoke run: a few seconds, asserts correctness only, never speed
 *
 * Prints a table and writes results.json + summary.md to bench/results/<timestamp>/. Exits 1
 * when a check fails (e.g. a publish not answered 201). Child processes are always stopped.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { parseFlags } from './lib/args'
import { installCleanup, stopAll } from './lib/processes'
import { printTable, writeResults } from './lib/report'
import type { RunOptions, Scenario } from './lib/scenario'
import { publishScenario } from './scenarios/publish'

const SCENARIOS: Record<string, Scenario> = {
  publish: publishScenario,
}

async function main(): Promise<number> {
  const f = parseFlags(process.argv.slice(2), { seconds: 'number', warmup: 'number', connections: 'number', pipeline: 'number', short: 'boolean', help: 'boolean' })
  const name = f._[0]
  const scenario = name ? SCENARIOS[name] : undefined
  if (f.help || !scenario) {
    console.log(`usage: bun bench/run.ts <${Object.keys(SCENARIOS).join('|')}> [--seconds N] [--warmup N] [--connections N] [--pipeline N] [--short]`)
    return f.help ? 0 : 2
  }
  const short = f.short ?? false
  const startedAt = new Date().toISOString()
  const outDir = join(import.meta.dir, 'results', `${startedAt.replace(/[:.]/g, '-')}-${name}`)
  mkdirSync(outDir, { recursive: true })
  const o: RunOptions = {
    seconds: f.seconds ?? (short ? 3 : 10),
    warmup: f.warmup ?? (short ? 0.5 : 2),
    connections: Math.max(1, Math.floor(f.connections ?? 50)),
    pipeline: Math.max(1, Math.floor(f.pipeline ?? 4)),
    short,
    outDir,
  }

  installCleanup()
  try {
    const result = await scenario(o)
    printTable(result)
    await writeResults(result, o, startedAt)
    console.log(`\nresults: ${outDir}/{results.json,summary.md}`)
    const failed = result.checks.filter((c) => !c.ok)
    if (failed.length) {
      console.error(`\nBENCHMARK FAILED: ${failed.map((c) => c.name).join('; ')}`)
      return 1
    }
    return 0
  } finally {
    await stopAll()
  }
}

main().then((code) => process.exit(code), async (e) => {
  console.error(`\nBENCHMARK ERROR: ${e instanceof Error ? e.stack ?? e.message : String(e)}`)
  await stopAll()
  process.exit(1)
})
