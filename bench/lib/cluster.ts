/**
 * Several gateway processes sharing one port (REUSE_PORT=true: the kernel spreads connections
 * among them) on a private redis-server: a node each, one cluster behind one address, the way
 * a host with several cores runs the gateway.
 */
import { startRedis, type RedisServer } from './redis-server'
import { freePort } from './processes'
import { startGateway, type GatewayOptions, type Target } from './targets'

export interface Cluster extends Target {
  key: string
  pids: number[]
  redis: RedisServer
}

/**
 * `n` nodes on one port, started one after the other (the first bootstraps Redis). The port
 * answers /ready as soon as one process is ready, so after each start the cluster must answer
 * /ready on 30 fresh connections in a row: a process still starting (503) would be hit by one
 * of them with probability 1 - (1/2)^30 or better.
 */
export async function startCluster(n: number, o: GatewayOptions): Promise<Cluster> {
  const name = o.name ?? 'cluster'
  const redis = await startRedis(o.logDir, `${name}-redis`)
  const port = freePort()
  const nodes: Array<Target & { key: string }> = []
  const stop = async () => {
    await Promise.all(nodes.map((g) => g.stop()))
    await redis.stop()
  }
  try {
    const env = { ...o.env, REDIS_URL: redis.url, REDIS_PREFIX: 'bench:', REUSE_PORT: 'true' }
    for (let i = 0; i < n; i++) {
      nodes.push(await startGateway({ ...o, env, port, name: `${name}-${i + 1}` }))
      await readyOnEveryProcess(nodes[0]!.base)
    }
  } catch (e) {
    await stop()
    throw e
  }
  return {
    name,
    base: nodes[0]!.base,
    pid: nodes[0]!.pid,
    pids: nodes.map((g) => g.pid),
    key: nodes[0]!.key,
    redis,
    stop,
  }
}

/** Waits until 30 fresh connections in a row to `base` are answered /ready 200 (every process sharing the port is up). */
export async function readyOnEveryProcess(base: string, timeoutMs = 20_000): Promise<void> {
  const until = Date.now() + timeoutMs
  let inARow = 0
  while (inARow < 30) {
    if (Date.now() > until) throw new Error(`${base}/ready: not every process ready after ${timeoutMs} ms`)
    const res = await fetch(`${base}/ready`, { headers: { connection: 'close' } }).catch(() => undefined)
    await res?.arrayBuffer()
    inARow = res?.status === 200 ? inARow + 1 : 0
    if (inARow === 0) await Bun.sleep(100)
  }
}
