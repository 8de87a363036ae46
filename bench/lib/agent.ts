/**
 * Benchmark helper processes driven by the parent over Bun IPC: the parent calls named operations
 * (`agent.call('open', {...})`), the child answers each with its result or an error. The child
 * side is `serveAgent(handlers)`; it exits when the parent goes away.
 */
import { join } from 'node:path'
import { BUN, spawnTracked, stopProcess } from './processes'

type Handlers = Record<string, (args: any) => unknown>
interface Request {
  id: number
  op: string
  args: unknown
}
interface Reply {
  id: number
  ok: boolean
  result?: unknown
  error?: string
}

export interface Agent {
  name: string
  pid: number
  call<T>(op: string, args?: unknown, timeoutMs?: number): Promise<T>
  stop(): Promise<void>
}

export interface AgentOptions {
  /** Child log files: <logDir>/<name>.err.log (and .log). */
  logDir: string
  fdLimit?: number
  /** Write a CPU profile into logDir when it exits (`bun --cpu-prof`, plus its markdown form). */
  cpuProfile?: boolean
}

/** Starts `bun <script>` as an agent. */
export function startAgent(name: string, script: string, o: AgentOptions): Agent {
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>()
  let nextId = 0
  const profile = o.cpuProfile
    ? ['--cpu-prof', '--cpu-prof-md', `--cpu-prof-dir=${o.logDir}`, `--cpu-prof-name=${name}`]
    : []
  const proc = spawnTracked([BUN, ...profile, script], {
    stdout: join(o.logDir, `${name}.log`),
    stderr: join(o.logDir, `${name}.err.log`),
    fdLimit: o.fdLimit,
    ipc: (message) => {
      const m = message as Reply
      const p = pending.get(m.id)
      if (!p) return
      pending.delete(m.id)
      if (m.ok) p.resolve(m.result)
      else p.reject(new Error(`${name}: ${m.error}`))
    },
  })
  void proc.exited.then((code) => {
    for (const p of pending.values())
      p.reject(new Error(`${name} exited (${code}) during a call; see ${o.logDir}/${name}.err.log`))
    pending.clear()
  })
  return {
    name,
    pid: proc.pid,
    call<T>(op: string, args?: unknown, timeoutMs = 120_000): Promise<T> {
      const id = nextId++
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.delete(id)
          reject(new Error(`${name}: ${op} timed out after ${timeoutMs} ms`))
        }, timeoutMs)
        pending.set(id, {
          resolve: (v) => {
            clearTimeout(timer)
            resolve(v)
          },
          reject: (e) => {
            clearTimeout(timer)
            reject(e)
          },
        })
        proc.send({ id, op, args } satisfies Request)
      })
    },
    stop: () => stopProcess(proc),
  }
}

/** Child side: answers the parent's calls with `handlers`; exits when the parent is gone. */
export function serveAgent(handlers: Handlers): void {
  if (!process.send) throw new Error('not started as an agent (no IPC channel): use startAgent')
  const send = process.send.bind(process)
  process.on('message', async (message: unknown) => {
    const { id, op, args } = message as Request
    try {
      const handler = handlers[op]
      if (!handler) throw new Error(`unknown operation ${op}`)
      send({ id, ok: true, result: await handler(args) } satisfies Reply)
    } catch (e) {
      send({ id, ok: false, error: e instanceof Error ? (e.stack ?? e.message) : String(e) } satisfies Reply)
    }
  })
  process.on('disconnect', () => process.exit(0))
  process.on('SIGTERM', () => process.exit(0)) // a normal exit, so `--cpu-prof` writes its profile
  const parent = process.ppid
  setInterval(() => {
    if (process.ppid !== parent) process.exit(0)
  }, 1000).unref()
}
