import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient, createCluster } from 'redis'
import { freePort, REDIS_SERVER, sharedRedis } from './redis'
import { requireSystem } from './system'

export const REDIS_CLI = '/usr/bin/redis-cli'

const alive = (p: ChildProcess | undefined) => !!p && p.exitCode === null && p.signalCode === null

/** Runs redis-cli against one node; returns its output (throws on failure). */
function cli(port: number, ...args: string[]): string {
  const r = spawnSync(REDIS_CLI, ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`redis-cli ${args.join(' ')}: ${r.stderr || r.stdout}`)
  return r.stdout
}

/**
 * A real Redis Cluster of the test's own: 3 masters with a replica each (6 redis-server
 * processes on free ports, nothing kept on disk but the cluster's node files), created with
 * `redis-cli --cluster create`. A master can be killed (SIGKILL): its replica takes over after
 * the node timeout (2 s).
 */
export class TestRedisCluster {
  readonly procs = new Map<number, ChildProcess>()
  private constructor(
    readonly ports: number[],
    private readonly dir: string,
  ) {}

  /** The seed nodes, as REDIS_URL takes them with REDIS_CLUSTER=true. */
  get url() {
    return this.ports.map((p) => `redis://127.0.0.1:${p}`).join(',')
  }

  static async start(opts: { masters?: number; replicas?: number } = {}): Promise<TestRedisCluster> {
    const masters = opts.masters ?? 3
    const replicas = opts.replicas ?? 1
    const ports: number[] = []
    while (ports.length < masters * (1 + replicas)) {
      const p = await freePort()
      // a cluster node also listens on port + 10000 (the cluster bus)
      if (p < 55000 && !ports.includes(p)) ports.push(p)
    }
    const c = new TestRedisCluster(ports, mkdtempSync(join(tmpdir(), 'gw-redis-cluster-')))
    try {
      for (const p of ports) c.spawn(p)
      for (const p of ports) await c.waitUp(p)
      cli(
        ports[0]!,
        '--cluster',
        'create',
        ...ports.map((p) => `127.0.0.1:${p}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      )
      await c.waitOk()
    } catch (e) {
      await c.stop()
      throw e
    }
    return c
  }

  private spawn(port: number) {
    const proc = spawn(
      REDIS_SERVER,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(this.dir, `nodes-${port}.conf`),
        '--cluster-node-timeout',
        '2000',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        this.dir,
      ],
      { stdio: 'ignore' },
    )
    this.procs.set(port, proc)
  }

  private async waitUp(port: number) {
    for (let i = 0; i < 200; i++) {
      try {
        if (cli(port, 'PING').trim() === 'PONG') return
      } catch {
        // not yet
      }
      await Bun.sleep(25)
    }
    throw new Error(`redis-server on ${port} did not start`)
  }

  /** Waits until every live node reports `cluster_state:ok` and agrees on the slots' masters. */
  async waitOk(timeoutMs = 30_000) {
    const until = Date.now() + timeoutMs
    while (Date.now() < until) {
      const live = this.ports.filter((p) => alive(this.procs.get(p)))
      try {
        // every node sees the whole cluster served, and every replica has its master's data flowing
        const ok = live.every((p) => {
          if (!cli(p, 'CLUSTER', 'INFO').includes('cluster_state:ok')) return false
          const repl = cli(p, 'INFO', 'replication')
          return !repl.includes('role:slave') || repl.includes('master_link_status:up')
        })
        if (ok) return
      } catch {
        // a node still starting
      }
      await Bun.sleep(100)
    }
    throw new Error('the Redis Cluster did not reach cluster_state:ok')
  }

  /** The port of the master serving `key`'s slot now. */
  masterOf(key: string): number {
    const live = this.ports.find((p) => alive(this.procs.get(p)))!
    const slot = Number(cli(live, 'CLUSTER', 'KEYSLOT', key).trim())
    for (const line of cli(live, 'CLUSTER', 'NODES').split('\n')) {
      const f = line.split(' ')
      if (!f[2]?.includes('master') || f[2].includes('fail')) continue
      for (const range of f.slice(8)) {
        const [a, b] = range.split('-').map(Number)
        if (slot >= a! && slot <= (b ?? a)!) return Number(f[1]!.split(':')[1]!.split('@')[0])
      }
    }
    throw new Error(`no master serves slot ${slot}`)
  }

  /** Starts a killed node again, on its port with its node file: it rejoins (a replaced master as a replica). */
  async restart(port: number): Promise<void> {
    if (alive(this.procs.get(port))) return
    this.spawn(port)
    await this.waitUp(port)
  }

  /** SIGKILL of one node (a master: its replica is promoted after the node timeout). */
  async kill(port: number): Promise<void> {
    const p = this.procs.get(port)
    if (!p || !alive(p)) return
    const exited = new Promise((r) => p.once('exit', r))
    p.kill('SIGKILL')
    await exited
  }

  /** A cluster client of the test (reads and checks beside the gateway). */
  async client() {
    const c = createCluster({ rootNodes: this.ports.map((p) => ({ url: `redis://127.0.0.1:${p}` })) })
    c.on('error', () => {})
    await c.connect()
    return c
  }

  stop = async () => {
    await Promise.all([...this.procs.keys()].map((p) => this.kill(p)))
    rmSync(this.dir, { recursive: true, force: true })
  }
}

let shared: Promise<TestRedisCluster> | undefined

/** One Redis Cluster for the whole test process (suites run with TEST_BACKEND=redis-cluster). */
export function sharedRedisCluster(): Promise<TestRedisCluster> {
  if (!requireSystem(REDIS_SERVER, 'redis-server')) throw new Error('redis-server is not installed')
  if (!requireSystem(REDIS_CLI, 'redis-cli')) throw new Error('redis-cli is not installed')
  shared ??= TestRedisCluster.start()
  return shared
}

export async function stopSharedRedisCluster(): Promise<void> {
  const c = await shared
  shared = undefined
  await c?.stop()
}

/**
 * A raw client on the Redis a test gateway uses (one redis-server or a cluster, by its config),
 * for tests that look at keys beside the gateway: commands are routed by their first key.
 */
export async function rawRedis(config: { redisUrl: string; redisCluster?: boolean }) {
  if (config.redisCluster) {
    const c = createCluster({
      rootNodes: config.redisUrl.split(',').map((url) => ({ url })),
    })
    c.on('error', () => {})
    await c.connect()
    return {
      send: (args: string[]): Promise<unknown> => c.sendCommand(args[1], false, args),
      /** The command on every master (a command without a key, such as INFO). */
      onEach: (args: string[]): Promise<unknown[]> =>
        Promise.all(c.masters.map(async (m) => (await c.nodeClient(m)).sendCommand(args))),
      close: () => c.close(),
    }
  }
  const c = createClient({ url: config.redisUrl })
  c.on('error', () => {})
  await c.connect()
  return {
    send: (args: string[]): Promise<unknown> => c.sendCommand(args),
    onEach: async (args: string[]): Promise<unknown[]> => [await c.sendCommand(args)],
    close: () => c.quit(),
  }
}

/** Whether the suites run on Redis (one redis-server or a cluster: TEST_BACKEND=redis|redis-cluster). */
export const onRedis = () => process.env.TEST_BACKEND === 'redis' || process.env.TEST_BACKEND === 'redis-cluster'

/**
 * The environment of a gateway process on the backend TEST_BACKEND names: the tests' own
 * redis-server or Redis Cluster with this key prefix, or nothing (embedded).
 */
export async function backendEnvFor(prefix: string): Promise<Record<string, string>> {
  if (process.env.TEST_BACKEND === 'redis') return { REDIS_URL: (await sharedRedis()).url, REDIS_PREFIX: prefix }
  if (process.env.TEST_BACKEND === 'redis-cluster')
    return { REDIS_URL: (await sharedRedisCluster()).url, REDIS_CLUSTER: 'true', REDIS_PREFIX: prefix }
  return {}
}
