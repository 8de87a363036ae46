import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { requireSystem } from './system'

export const REDIS_SERVER = '/usr/bin/redis-server'

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port
      s.close(() => resolve(port))
    })
    s.on('error', reject)
  })
}

/**
 * A real redis-server process of the test's own, on a free port (so tests may kill and restart it).
 * It keeps nothing on disk (a restart comes back empty) unless started with `persist`: then it
 * writes every command to an append-only file, as a deployment must, and a restart keeps its data.
 */
export class TestRedis {
  private proc?: ChildProcess
  constructor(
    readonly port: number,
    private readonly dir?: string,
  ) {}

  get url() {
    return `redis://127.0.0.1:${this.port}`
  }

  static async start(opts: { persist?: boolean } = {}): Promise<TestRedis> {
    const r = new TestRedis(await freePort(), opts.persist ? mkdtempSync(join(tmpdir(), 'gw-redis-')) : undefined)
    await r.restart()
    return r
  }

  async restart(): Promise<void> {
    const storage = this.dir
      ? ['--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--dir', this.dir]
      : ['--save', '', '--appendonly', 'no']
    this.proc = spawn(REDIS_SERVER, ['--port', String(this.port), '--bind', '127.0.0.1', ...storage], {
      stdio: 'ignore',
    })
    for (let i = 0; i < 200; i++) {
      if (await this.ping()) return
      await Bun.sleep(25)
    }
    throw new Error('redis-server did not start')
  }

  private async ping(): Promise<boolean> {
    try {
      const sock = await Bun.connect({ hostname: '127.0.0.1', port: this.port, socket: { data() {} } })
      sock.end()
      return true
    } catch {
      return false
    }
  }

  /** SIGKILL: Redis vanishes without a goodbye. */
  async kill(): Promise<void> {
    const p = this.proc
    if (!p || p.exitCode !== null) return
    const exited = new Promise((r) => p.once('exit', r))
    p.kill('SIGKILL')
    await exited
  }

  stop = async () => {
    await this.kill()
    if (this.dir) rmSync(this.dir, { recursive: true, force: true })
  }
}

let shared: Promise<TestRedis> | undefined

/** One redis-server for the whole test process (contract runs with TEST_BACKEND=redis). */
export function sharedRedis(): Promise<TestRedis> {
  if (!requireSystem(REDIS_SERVER, 'redis-server')) throw new Error('redis-server is not installed')
  shared ??= TestRedis.start()
  return shared
}

export async function stopSharedRedis(): Promise<void> {
  const r = await shared
  shared = undefined
  await r?.kill()
}
