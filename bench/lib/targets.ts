/**
 * Servers under test, each started as a tracked child process on a free port and stopped by
 * `stop()` (and by the cleanup hooks of processes.ts if the run dies first).
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { allocatorRestartEnv } from '../../src/config/allocator'
import { BUN, freePort, onExit, spawnTracked, stopProcess, waitForOk } from './processes'

export interface Target {
  name: string
  /** http://127.0.0.1:<port> */
  base: string
  pid: number
  stop(): Promise<void>
}

const ROOT = resolve(import.meta.dir, '../..')
/** The checkout whose gateway runs: this one, or BENCH_GATEWAY_DIR (another checkout, e.g. the code before a change). */
const GATEWAY_ROOT = resolve(process.env.BENCH_GATEWAY_DIR || ROOT)

/** The bare Bun.serve hello world (bench/baseline-server.ts), with `env` over the bench's environment. */
export async function startBaseline(logDir: string, env: Record<string, string> = {}): Promise<Target> {
  const port = freePort()
  const proc = spawnTracked([BUN, join(ROOT, 'bench/baseline-server.ts')], {
    env: { PORT: String(port), HOST: '127.0.0.1', ...env },
    stdout: join(logDir, 'baseline.log'),
    stderr: join(logDir, 'baseline.err.log'),
  })
  const base = `http://127.0.0.1:${port}`
  try {
    await waitForOk(`${base}/`, proc)
  } catch (e) {
    await stopProcess(proc)
    throw e
  }
  return { name: 'baseline', base, pid: proc.pid, stop: () => stopProcess(proc) }
}

export const BENCH_KEY = 'bench.benchkey:bench-secret-not-for-production'

/**
 * A gateway's environment with rate limits on and nothing refused: every publish is charged to
 * its account's bucket under limits far above any load here (history too: short runs read every
 * channel back). For what the limiter costs (`--rate-limits`).
 */
export const RATE_LIMITS_UNREFUSED: Record<string, string> = {
  RATE_LIMITS: 'on',
  LIMIT_MESSAGES_PER_SECOND: '1000000000',
  LIMIT_HISTORY_PER_SECOND: '1000000000',
}

export interface GatewayOptions {
  logDir: string
  /** Extra settings (env) on top of the bench defaults, e.g. RING_SIZE or REDIS_URL. */
  env?: Record<string, string>
  /** Log file names: <logDir>/<name>.log and .err.log (default gateway). */
  name?: string
  /** Open-file limit asked for the gateway (e.g. for tens of thousands of event streams); see fd-limit.ts. */
  fdLimit?: number
  /** Write a CPU profile of the gateway into logDir when it stops (`bun --cpu-prof`, plus its markdown form). */
  cpuProfile?: boolean
  /** A DATA_DIR prepared by the caller (kept at stop); default a fresh temporary one, removed at stop. */
  dataDir?: string
  /** The port to listen on (default a free one); several processes share one with REUSE_PORT=true. */
  port?: number
}

/** `bun src/main.ts` (of GATEWAY_ROOT) on a fresh temporary DATA_DIR (or o.dataDir) with BENCH_KEY as its root key. */
export async function startGateway(o: GatewayOptions): Promise<Target & { key: string }> {
  const port = o.port ?? freePort()
  const name = o.name ?? 'gateway'
  const dataDir = o.dataDir ?? mkdtempSync(join(tmpdir(), 'gateway-bench-'))
  const profile = o.cpuProfile
    ? ['--cpu-prof', '--cpu-prof-md', `--cpu-prof-dir=${o.logDir}`, `--cpu-prof-name=${name}`]
    : []
  const env: Record<string, string> = {
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    BOOTSTRAP_KEY: BENCH_KEY,
    LOG_LEVEL: 'warn',
    REDIS_URL: '',
    RATE_LIMITS: 'off',
    ...o.env,
  }
  // a profiled gateway is not begun again for its allocator's settings (src/main.ts): given them
  // here, where its checkout sets them at all
  const allocator =
    o.cpuProfile && existsSync(join(GATEWAY_ROOT, 'src/config/allocator.ts'))
      ? allocatorRestartEnv({ ...process.env, ...env })
      : undefined
  if (allocator?.MIMALLOC_PURGE_DELAY) env.MIMALLOC_PURGE_DELAY = allocator.MIMALLOC_PURGE_DELAY
  const proc = spawnTracked([BUN, ...profile, join(GATEWAY_ROOT, 'src/main.ts')], {
    env,
    stdout: join(o.logDir, `${name}.log`),
    stderr: join(o.logDir, `${name}.err.log`),
    fdLimit: o.fdLimit,
  })
  const removeDataDir = () => {
    if (!o.dataDir) rmSync(dataDir, { recursive: true, force: true })
  }
  const unregister = onExit(removeDataDir)
  const stop = async () => {
    // a profiled gateway writes its profile on the way out: give it the time (a graceful realtime
    // shutdown with thousands of messages in flight took longer than the default grace)
    await stopProcess(proc, o.cpuProfile ? 30_000 : undefined)
    removeDataDir()
    unregister()
  }
  const base = `http://127.0.0.1:${port}`
  try {
    await waitForOk(`${base}/ready`, proc)
  } catch (e) {
    await stop()
    const said = logTail(join(o.logDir, `${name}.err.log`)) || logTail(join(o.logDir, `${name}.log`))
    throw new Error(
      `gateway did not start (logs in ${o.logDir}/${name}*.log): ${(e as Error).message}${said ? `; it said:\n${said}` : ''}`,
    )
  }
  return { name: 'gateway', base, pid: proc.pid, key: BENCH_KEY, stop }
}

/** The last lines of a log that may not exist (a run's logs stay on the machine that ran it: CI's are gone). */
function logTail(path: string, lines = 20): string {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')
  } catch {
    return ''
  }
}
