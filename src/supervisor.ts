import type { Subprocess } from 'bun'
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { workerEnvironment, type Config } from './config'
import { MAX_SOCKET_DIR } from './config/schema'
import { createLogger, flushLogs, type Logger } from './lib/logger'

/**
 * `WORKERS` above 1: this process runs no node of its own but supervises that many workers, each
 * the same gateway (same executable, same arguments, same environment plus REUSE_PORT=true and
 * WORKER_ID), all listening on PORT (SO_REUSEPORT: the kernel spreads connections among them).
 * Each worker is a node of the Redis deployment: it bootstraps (one seeds the store and prints the
 * credentials, the others find them), has its own `/metrics`, and drains on SIGTERM as a single
 * node does. The workers write to the supervisor's stdout and stderr: one log stream. Unless
 * SIBLING_SOCKET_DIR is set, the supervisor makes a private directory (0700, removed when it
 * exits) where each worker listens on a unix socket, so a comet request reaching the wrong worker
 * is handed to the one holding its connection (api/realtime/comet-handover.ts).
 *
 * A worker that exits while the supervisor is not stopping is started again: at once when it had
 * run for STABLE_MS, else no sooner than its backoff after its last start (1 s, doubling up to
 * 15 s), so a worker that cannot start (Redis unreachable, a broken build) does not spin.
 * SIGTERM or SIGINT is passed on to every worker; the supervisor exits once they all have, killing
 * those still running SHUTDOWN_TIMEOUT_MS + 5 s later. A second signal kills them at once.
 */
export const MIN_RESTART_MS = 1000
export const MAX_RESTART_MS = 15_000
/** A worker that ran this long before it exited is restarted at once, its backoff reset. */
export const STABLE_MS = 30_000
/** Beyond SHUTDOWN_TIMEOUT_MS, how long workers may take to exit before they are killed. */
const EXIT_GRACE_MS = 5000

interface Worker {
  id: number
  proc?: Subprocess
  startedAt: number
  backoffMs: number
  restart?: ReturnType<typeof setTimeout>
}

/**
 * The command line that runs this gateway again: the compiled binary itself (whose argv[1] is its
 * embedded entry, `/$bunfs/...`), or the runtime with its flags and the entry script.
 */
export function selfCommand(): string[] {
  const args = process.argv.slice(2)
  const compiled = Bun.main.startsWith('/$bunfs/') || /^[A-Za-z]:[\\/]~BUN[\\/]/.test(Bun.main)
  return compiled ? [process.execPath, ...args] : [process.execPath, ...process.execArgv, Bun.main, ...args]
}

/** Runs `config.workers` workers until SIGTERM or SIGINT; resolves with the exit status. */
export function supervise(config: Config, cmd = selfCommand()): Promise<number> {
  const log = createLogger(config.logLevel, { supervisor: process.pid })
  const workers: Worker[] = Array.from({ length: config.workers }, (_, i) => ({
    id: i + 1,
    startedAt: 0,
    backoffMs: MIN_RESTART_MS,
  }))
  const ownSocketDir = config.siblingSocketDir ? undefined : privateSocketDir(log)
  const socketDir = config.siblingSocketDir || ownSocketDir
  let stopping = false
  let forced = false
  let killTimer: ReturnType<typeof setTimeout> | undefined
  let done!: (code: number) => void
  const finished = new Promise<number>((resolve) => (done = resolve))

  const start = (w: Worker) => {
    w.restart = undefined
    w.startedAt = Date.now()
    try {
      const proc = Bun.spawn(cmd, {
        env: workerEnvironment(w.id, undefined, socketDir),
        stdin: 'pipe', // never written: its end tells the worker the supervisor is gone
        stdout: 'inherit',
        stderr: 'inherit',
        onExit: (p, code, signal) => exited(w, p, code, signal),
      })
      w.proc = proc
      log.info('worker started', { worker: w.id, pid: proc.pid })
    } catch (e) {
      log.error('worker not started', { worker: w.id, error: e instanceof Error ? e.message : String(e) })
      scheduleRestart(w, { code: null, signal: null })
    }
  }

  const exited = (w: Worker, p: Subprocess, code: number | null, signal: NodeJS.Signals | number | null) => {
    if (w.proc !== p) return
    w.proc = undefined
    if (stopping) {
      log.info('worker stopped', { worker: w.id, pid: p.pid, code, signal })
      return finishIfIdle()
    }
    scheduleRestart(w, { pid: p.pid, code, signal })
  }

  const scheduleRestart = (w: Worker, how: Record<string, unknown>) => {
    const now = Date.now()
    const stable = now - w.startedAt >= STABLE_MS
    if (stable) w.backoffMs = MIN_RESTART_MS
    const delay = Math.max(0, w.startedAt + w.backoffMs - now)
    if (!stable) w.backoffMs = Math.min(MAX_RESTART_MS, w.backoffMs * 2)
    log.warn('worker exited; restarting it', { worker: w.id, ...how, restartInMs: delay })
    w.restart = setTimeout(() => start(w), delay)
  }

  const finishIfIdle = () => {
    if (!stopping || workers.some((w) => w.proc)) return
    clearTimeout(killTimer)
    if (ownSocketDir) rmSync(ownSocketDir, { recursive: true, force: true })
    log.info('stopped', { workers: workers.length })
    flushLogs()
    done(forced ? 1 : 0)
  }

  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn('second signal: killing the workers', { signal })
      return killAll()
    }
    stopping = true
    log.info('stopping workers', { signal })
    for (const w of workers) {
      clearTimeout(w.restart)
      w.proc?.kill(signal)
    }
    killTimer = setTimeout(() => {
      log.warn('workers still running; killing them', { ms: config.shutdownTimeoutMs + EXIT_GRACE_MS })
      killAll()
    }, config.shutdownTimeoutMs + EXIT_GRACE_MS)
    finishIfIdle()
  }
  const killAll = () => {
    for (const w of workers) {
      if (!w.proc) continue
      forced = true
      w.proc.kill('SIGKILL')
    }
  }

  process.on('SIGTERM', () => stop('SIGTERM'))
  process.on('SIGINT', () => stop('SIGINT'))
  log.info('supervising', { workers: workers.length, port: config.port })
  for (const w of workers) start(w)
  return finished
}

/**
 * A new private directory (mkdtemp: 0700) for the workers' sockets, named after this supervisor's
 * pid; the directories of supervisors that are gone (killed outright, so they could not remove
 * theirs) are removed first. Undefined, said in the log, when it cannot be made or its path is too
 * long for a socket path (comet clients then resume on the worker they reach instead).
 */
function privateSocketDir(log: Logger): string | undefined {
  removeStaleSocketDirs()
  let dir: string | undefined
  try {
    dir = mkdtempSync(join(tmpdir(), `${SOCKET_DIR_PREFIX}${process.pid}-`))
    if (dir.length <= MAX_SOCKET_DIR) return dir
    rmSync(dir, { recursive: true, force: true })
  } catch {}
  log.warn("no directory for the workers' sockets: comet requests are not handed between workers", { dir })
  return undefined
}

const SOCKET_DIR_PREFIX = 'gateway-workers-'

function removeStaleSocketDirs() {
  const pattern = new RegExp(`^${SOCKET_DIR_PREFIX}(\\d+)-`)
  let names: string[] = []
  try {
    names = readdirSync(tmpdir())
  } catch {}
  for (const name of names) {
    const pid = Number(pattern.exec(name)?.[1] ?? 0)
    if (!pid || pid === process.pid || alive(pid)) continue
    try {
      const dir = join(tmpdir(), name)
      if (statSync(dir).uid === process.getuid?.()) rmSync(dir, { recursive: true, force: true })
    } catch {}
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * In a worker: resolves when the supervisor that started it is gone. The supervisor holds the
 * write end of the worker's stdin and never writes, so its end of file comes when the supervisor
 * exits, however it died (a SIGKILL passes nothing on): no worker outlives it.
 */
export async function supervisorGone(): Promise<void> {
  try {
    for await (const _ of Bun.stdin.stream()) {
      /* nothing is ever written */
    }
  } catch {
    /* closed */
  }
}
