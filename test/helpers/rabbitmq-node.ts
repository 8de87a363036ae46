import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs'
import { connect, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** Where Debian's package keeps the scripts that run as the calling user (/usr/sbin ones switch to `rabbitmq`). */
export const RABBITMQ_BIN = '/usr/lib/rabbitmq/bin'

/** A local port nothing listens on now. */
async function freePort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  const port = (s.address() as { port: number }).port
  await new Promise<void>((resolve) => s.close(() => resolve()))
  return port
}

const isOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const c = connect(port, '127.0.0.1')
    c.once('connect', () => {
      c.destroy()
      resolve(true)
    })
    c.once('error', () => resolve(false))
  })

async function waitPort(port: number, open: boolean, ms: number, what: string): Promise<void> {
  const until = Date.now() + ms
  while ((await isOpen(port)) !== open) {
    if (Date.now() > until) throw new Error(`${what}: port ${port} still ${open ? 'closed' : 'open'} after ${ms} ms`)
    await Bun.sleep(200)
  }
}

/**
 * A RabbitMQ node of a test's own (never the shared service on 5672): its own node name, AMQP,
 * distribution and management ports (free ones), data and log directories under a temporary
 * directory, and its own config (guest may connect from anywhere on it; the management plugin
 * only). It can be stopped and started again on the same data, as a broker restart is; `destroy`
 * stops it and removes its directory.
 */
export class RabbitNode {
  private proc?: ChildProcess
  private readonly env: Record<string, string>

  private constructor(
    readonly dir: string,
    readonly name: string,
    readonly amqpPort: number,
    readonly managementPort: number,
    distPort: number,
  ) {
    writeFileSync(join(dir, 'enabled_plugins'), '[rabbitmq_management].\n')
    writeFileSync(
      join(dir, 'rabbitmq.conf'),
      `listeners.tcp.default = 127.0.0.1:${amqpPort}\nmanagement.tcp.ip = 127.0.0.1\nmanagement.tcp.port = ${managementPort}\n`,
    )
    writeFileSync(join(dir, 'rabbitmq-env.conf'), '')
    this.env = {
      ...(process.env as Record<string, string>),
      RABBITMQ_NODENAME: name,
      RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
      RABBITMQ_NODE_PORT: String(amqpPort),
      RABBITMQ_DIST_PORT: String(distPort),
      RABBITMQ_MNESIA_BASE: join(dir, 'mnesia'),
      RABBITMQ_LOG_BASE: join(dir, 'log'),
      RABBITMQ_PID_FILE: join(dir, 'pid'),
      RABBITMQ_PLUGINS_EXPAND_DIR: join(dir, 'plugins-expand'),
      RABBITMQ_ENABLED_PLUGINS_FILE: join(dir, 'enabled_plugins'),
      RABBITMQ_CONFIG_FILE: join(dir, 'rabbitmq.conf'),
      RABBITMQ_ADVANCED_CONFIG_FILE: join(dir, 'advanced.config'),
      // not the system's /etc/rabbitmq/rabbitmq-env.conf, which names the shared node
      RABBITMQ_CONF_ENV_FILE: join(dir, 'rabbitmq-env.conf'),
      ERL_EPMD_ADDRESS: '127.0.0.1',
    }
  }

  static async create(): Promise<RabbitNode> {
    const dir = mkdtempSync(join(tmpdir(), 'rabbit-node-'))
    const name = `test${process.pid}x${Math.random().toString(36).slice(2, 8)}@localhost`
    let amqp = await freePort()
    let dist = await freePort()
    let mgmt = await freePort()
    while (new Set([amqp, dist, mgmt]).size < 3)
      [amqp, dist, mgmt] = [await freePort(), await freePort(), await freePort()]
    return new RabbitNode(dir, name, amqp, mgmt, dist)
  }

  get amqpUrl(): string {
    return `amqp://guest:guest@127.0.0.1:${this.amqpPort}`
  }

  get managementUrl(): string {
    return `http://guest:guest@127.0.0.1:${this.managementPort}`
  }

  /** Starts the node and waits until it takes AMQP connections and its management API answers. */
  async start(ms = 240_000): Promise<void> {
    const out = openSync(join(this.dir, 'server.out'), 'a')
    this.proc = spawn(join(RABBITMQ_BIN, 'rabbitmq-server'), [], {
      env: this.env,
      cwd: this.dir,
      detached: true,
      stdio: ['ignore', out, out],
    })
    closeSync(out)
    let exited = false
    this.proc.once('exit', () => (exited = true))
    const until = Date.now() + ms
    for (const port of [this.amqpPort, this.managementPort]) {
      while (!(await isOpen(port))) {
        if (exited) throw new Error(`rabbitmq-server exited at start; see ${join(this.dir, 'server.out')}`)
        if (Date.now() > until) throw new Error(`rabbitmq-server did not open port ${port} in ${ms} ms`)
        await Bun.sleep(200)
      }
    }
  }

  /** Stops the node the way an operator does (`rabbitmqctl stop`), and waits until its AMQP port is closed. */
  async stop(ms = 60_000): Promise<void> {
    const ctl = spawn(join(RABBITMQ_BIN, 'rabbitmqctl'), ['stop'], { env: this.env, stdio: 'ignore', timeout: ms })
    const status = await new Promise<number | null>((resolve) => {
      ctl.once('exit', resolve)
      ctl.once('error', () => resolve(null))
    })
    if (status !== 0) this.kill()
    await waitPort(this.amqpPort, false, ms, 'rabbitmq-server stop')
    this.proc = undefined
  }

  private kill() {
    if (this.proc?.pid && this.proc.exitCode === null)
      try {
        process.kill(-this.proc.pid, 'SIGKILL')
      } catch {
        // gone already
      }
  }

  async destroy(): Promise<void> {
    if (this.proc) await this.stop().catch(() => this.kill())
    rmSync(this.dir, { recursive: true, force: true })
  }
}
