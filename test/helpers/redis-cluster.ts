import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createClient, createCluster } from 'redis'
import { LocalRedisCluster } from '../../tools/redis-cluster'
import { REDIS_SERVER, sharedRedis } from './redis'
import { requireSystem } from './system'

export const REDIS_CLI = '/usr/bin/redis-cli'

/** Runs redis-cli against one node; returns its output (throws on failure). */
function cli(port: number, ...args: string[]): string {
  const r = spawnSync(REDIS_CLI, ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8' })
  if (r.status !== 0) throw new Error(`redis-cli ${args.join(' ')}: ${r.stderr || r.stdout}`)
  return r.stdout
}

/**
 * A real Redis Cluster of the test's own: 3 masters with a replica each (6 redis-server
 * processes on free ports, nothing kept on disk but the cluster's node files), formed by the
 * code `npm run cluster` runs (tools/redis-cluster.ts). A master can be killed (SIGKILL): its
 * replica takes over after the node timeout (2 s).
 */
export class TestRedisCluster {
  private constructor(private readonly c: LocalRedisCluster) {}

  get ports() {
    return this.c.ports
  }
  /** The seed nodes, as REDIS_URL takes them with REDIS_CLUSTER=true. */
  get url() {
    return this.c.url
  }

  static async start(opts: { masters?: number; replicas?: number } = {}): Promise<TestRedisCluster> {
    const c = await LocalRedisCluster.start({
      dir: mkdtempSync(join(tmpdir(), 'gw-redis-cluster-')),
      masters: opts.masters ?? 3,
      replicas: opts.replicas ?? 1,
      persist: false,
      nodeTimeoutMs: 2000,
    })
    return new TestRedisCluster(c)
  }

  /** Waits until every live node reports `cluster_state:ok` and every replica's link is up. */
  waitOk(timeoutMs = 30_000) {
    return this.c.waitOk(timeoutMs)
  }

  /** The port of the master serving `key`'s slot now. */
  masterOf(key: string): number {
    const live = this.ports.find((p) => this.c.alive(p))!
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
    if (this.c.alive(port)) return
    this.c.startNode(port)
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

  /** SIGKILL of one node (a master: its replica is promoted after the node timeout). */
  kill(port: number): Promise<void> {
    return this.c.kill(port)
  }

  /** A cluster client of the test (reads and checks beside the gateway). */
  async client() {
    const c = createCluster({ rootNodes: this.ports.map((p) => ({ url: `redis://127.0.0.1:${p}` })) })
    c.on('error', () => {})
    await c.connect()
    return c
  }

  stop = async () => {
    await this.c.stop()
    rmSync(this.c.dir, { recursive: true, force: true })
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
