import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ROOT_KEY } from './gateway'
import { freePort } from './redis'

const ROOT = join(import.meta.dir, '..', '..')

/** How a node is launched: `cmd` replaces `bun src/main.ts` (e.g. a compiled binary); `cwd` its working dir. */
export interface LaunchOptions {
  cmd?: string[]
  cwd?: string
  /** `https` for a node with TLS_CERT_FILE (its certificate is not checked). */
  scheme?: 'http' | 'https'
  /** The port (default a free one), e.g. one several nodes share with REUSE_PORT=true. */
  port?: number
}

/** A gateway node as deployed: `bun src/main.ts` in its own process, configured by environment. */
export class GatewayNode {
  private proc?: ChildProcess
  readonly dataDir = mkdtempSync(join(tmpdir(), 'gw-node-'))
  log = ''

  private constructor(
    readonly port: number,
    readonly env: Record<string, string>,
    private readonly opts: LaunchOptions,
  ) {}

  get url() {
    return `${this.opts.scheme ?? 'http'}://127.0.0.1:${this.port}`
  }
  get pid() {
    return this.proc?.pid
  }
  /** How the process ended (both null while it runs). */
  get exit() {
    return { code: this.proc?.exitCode ?? null, signal: this.proc?.signalCode ?? null }
  }

  static async start(env: Record<string, string>, opts: LaunchOptions = {}): Promise<GatewayNode> {
    const n = new GatewayNode(opts.port ?? (await freePort()), env, opts)
    await n.launch()
    return n
  }

  private async launch() {
    const [bin, ...args] = this.opts.cmd ?? [process.execPath, join(ROOT, 'src/main.ts')]
    this.proc = spawn(bin!, args, {
      cwd: this.opts.cwd,
      env: {
        ...process.env,
        PORT: String(this.port),
        HOST: '127.0.0.1',
        DATA_DIR: this.dataDir,
        BOOTSTRAP_KEY: ROOT_KEY,
        LOG_LEVEL: 'warn',
        RATE_LIMITS: 'off',
        ...this.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    this.proc.stdout!.on('data', (d) => {
      this.log += d
    })
    this.proc.stderr!.on('data', (d) => {
      this.log += d
    })
    for (let i = 0; i < 200; i++) {
      if (this.proc.exitCode !== null) throw new Error(`node exited: ${this.log}`)
      try {
        const tls = { rejectUnauthorized: false }
        if ((await fetch(`${this.url}/ready`, { tls } as RequestInit)).status === 200) return
      } catch {
        /* not listening yet */
      }
      await Bun.sleep(50)
    }
    throw new Error(`node not ready: ${this.log}`)
  }

  /** Starts the process again on the same port and data dir (after `kill`). */
  restart() {
    return this.launch()
  }

  /** Ends the process with `signal` (SIGKILL: no goodbye at all). */
  async kill(signal: NodeJS.Signals = 'SIGKILL') {
    const p = this.proc
    if (!p || p.exitCode !== null || p.signalCode !== null) return
    const exited = new Promise((r) => p.once('exit', r))
    p.kill(signal)
    await exited
  }

  async stop() {
    await this.kill('SIGKILL')
    rmSync(this.dataDir, { recursive: true, force: true })
  }
}
