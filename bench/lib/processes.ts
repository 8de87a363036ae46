/**
 * Child processes of a benchmark run: every spawn is tracked and killed at the end, on error,
 * on Ctrl-C / SIGTERM and on exit, so no server outlives the run.
 */
import type { Subprocess } from 'bun'
import { withFdLimit } from './fd-limit'

export const BUN = process.execPath
const children = new Set<Subprocess>()
const exitHooks = new Set<() => void>()

/** Synchronous clean-up (e.g. removing a temp dir) also run if the parent dies; returns an unregister function. */
export function onExit(fn: () => void): () => void {
  exitHooks.add(fn)
  return () => exitHooks.delete(fn)
}

export interface SpawnOptions {
  env?: Record<string, string | undefined>
  /** A file path receives the stream; 'pipe' makes it readable by the parent. */
  stdout?: 'pipe' | 'inherit' | string
  stderr?: 'inherit' | string
  /** Messages the child sends with `process.send` (Bun IPC); the parent answers with `proc.send`. */
  ipc?: (message: unknown) => void
  /** Raise the child's open-file limit (soft and hard) to this before it starts; see fd-limit.ts. */
  fdLimit?: number
}

const sink = (s: string) => (s === 'pipe' || s === 'inherit' ? s : Bun.file(s))

export function spawnTracked(cmd: string[], opts: SpawnOptions = {}): Subprocess {
  const proc = Bun.spawn(opts.fdLimit ? withFdLimit(cmd, opts.fdLimit) : cmd, {
    env: { ...process.env, ...opts.env } as Record<string, string>,
    stdin: 'ignore',
    stdout: sink(opts.stdout ?? 'inherit'),
    stderr: sink(opts.stderr ?? 'inherit') as 'inherit',
    ...(opts.ipc ? { ipc: opts.ipc, serialization: 'json' as const } : {}),
  })
  children.add(proc)
  void proc.exited.then(() => children.delete(proc))
  return proc
}

/** SIGTERM, then SIGKILL whatever is still running after `graceMs`. */
export async function stopProcess(proc: Subprocess, graceMs = 3000): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return
  proc.kill('SIGTERM')
  const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs)
  await proc.exited
  clearTimeout(timer)
}

export async function stopAll(): Promise<void> {
  await Promise.all([...children].map((p) => stopProcess(p)))
}

let installed = false
/** Kills the children on any way out of the parent. Idempotent. */
export function installCleanup(): void {
  if (installed) return
  installed = true
  process.on('exit', () => {
    for (const p of children) p.kill('SIGKILL')
    for (const fn of exitHooks) {
      try {
        fn()
      } catch {
        /* best effort */
      }
    }
  })
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      process.stderr.write(`\n${sig}: stopping child processes\n`)
      void stopAll().finally(() => process.exit(130))
    })
  }
}

/** A port that was free a moment ago (the OS picks it). */
export function freePort(): number {
  const l = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = l.port
  l.stop(true)
  return port
}

/** Polls `url` until it answers 200; fails early if `proc` exits, or after `timeoutMs`. `init` adds fetch options (e.g. `tls.ca`). */
export async function waitForOk(
  url: string,
  proc: Subprocess,
  timeoutMs = 20_000,
  init: BunFetchRequestInit = {},
): Promise<void> {
  const until = Date.now() + timeoutMs
  let last = ''
  while (Date.now() < until) {
    if (proc.exitCode !== null || proc.signalCode !== null)
      throw new Error(`process exited (${proc.exitCode ?? proc.signalCode}) before ${url} was ready`)
    try {
      const res = await fetch(url, { ...init, signal: AbortSignal.timeout(1000) })
      if (res.status === 200) return
      last = `status ${res.status}`
    } catch (e) {
      last = (e as Error).message
    }
    await Bun.sleep(100)
  }
  throw new Error(`${url} not ready after ${timeoutMs} ms (${last})`)
}
