/**
 * Gateway nodes of two checkouts in one process, for the in-process before/after benches
 * (publish-route-cost.ts, realtime-publish-cost.ts): each loads its own modules from its own path.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { BENCH_KEY, RATE_LIMITS_UNREFUSED } from './targets'

/** The checkouts compared: BENCH_GATEWAY_DIR (else this one: the harness's own bias) before, this one after. */
export function benchSides(): { before: string; after: string } {
  const here = resolve(import.meta.dir, '../..')
  return { before: resolve(process.env.BENCH_GATEWAY_DIR || here), after: here }
}

const dataDirs: string[] = []

/**
 * A bootstrapped node of the checkout at `root` (its config and node, typed loosely: the two
 * checkouts' types may differ), on a data dir of its own, the bench key, rate limits off (on and
 * refusing nothing with `rateLimits`), and `env` over that.
 */
export async function inProcessNode(
  root: string,
  rateLimits: boolean,
  env: Record<string, string> = {},
): Promise<{ config: any; node: any }> {
  const { loadConfig } = await import(join(root, 'src/config/index.ts'))
  const { createNode } = await import(join(root, 'src/node.ts'))
  const dataDir = mkdtempSync(join(tmpdir(), 'in-process-node-'))
  dataDirs.push(dataDir)
  const config = loadConfig({
    DATA_DIR: dataDir,
    BOOTSTRAP_KEY: BENCH_KEY,
    LOG_LEVEL: 'warn',
    RATE_LIMITS: 'off',
    ...(rateLimits ? RATE_LIMITS_UNREFUSED : {}),
    PORT: '0',
    ...benchSettings(),
    ...env,
  })
  const node = await createNode(config)
  await node.bootstrap()
  return { config, node }
}

/**
 * Settings every in-process node of a bench takes (`BENCH_SETTINGS="RESUME_WINDOW_MS=0,RING_SIZE=50"`),
 * e.g. to measure a node whose rings hold their steady size from the start. A part that is not
 * `NAME=value` is an error, so a typo never silently runs the defaults.
 */
function benchSettings(): Record<string, string> {
  const out: Record<string, string> = {}
  const list = process.env.BENCH_SETTINGS?.trim()
  if (!list) return out
  for (const pair of list.split(',')) {
    const eq = pair.indexOf('=')
    if (eq <= 0) throw new Error(`BENCH_SETTINGS: "${pair}" is not NAME=value`)
    out[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim()
  }
  return out
}

/** Removes the nodes' data dirs (at the end of the bench). */
export function removeNodeDirs(): void {
  for (const d of dataDirs.splice(0)) rmSync(d, { recursive: true, force: true })
}
