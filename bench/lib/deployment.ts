/**
 * What a scenario runs against: the embedded backend (one gateway node) or Redis (a private
 * redis-server and two gateway nodes on it, same REDIS_URL and REDIS_PREFIX: a cluster).
 * Publishes go to `publishTo` (node A), subscribers connect to `subscribeTo` (node B), so in the
 * Redis variant every delivery crosses nodes. In memory mode both are the one node.
 */
import { cpuSeconds } from './cpu'
import { rssBytes } from './memory'
import { startRedis, type RedisServer } from './redis-server'
import { startGateway, type GatewayOptions, type Target } from './targets'

export type Backend = 'memory' | 'redis'
export type Gateway = Target & { key: string }

export interface Deployment {
  backend: Backend
  /** e.g. "memory (1 node)" or "redis (2 nodes)". */
  label: string
  publishTo: Gateway
  subscribeTo: Gateway
  nodes: Gateway[]
  redis?: RedisServer
  key: string
  /** CPU seconds used so far by the gateway nodes and redis-server together. */
  cpuSeconds(): number
  /** Resident memory of the gateway nodes together (bytes). */
  rssBytes(): number
  stop(): Promise<void>
}

/** The backends a run compares: memory always, then Redis with --redis. */
export const backendsOf = (o: { redis: boolean }): Backend[] => (o.redis ? ['memory', 'redis'] : ['memory'])

export async function startDeployment(backend: Backend, o: GatewayOptions): Promise<Deployment> {
  const name = o.name ?? 'gateway'
  if (backend === 'memory') {
    const gw = await startGateway(o)
    return {
      backend,
      label: 'memory (1 node)',
      publishTo: gw,
      subscribeTo: gw,
      nodes: [gw],
      key: gw.key,
      cpuSeconds: () => cpuSeconds(gw.pid) ?? 0,
      rssBytes: () => rssBytes(gw.pid) ?? 0,
      stop: () => gw.stop(),
    }
  }
  const redis = await startRedis(o.logDir, `${name}-redis`)
  const nodes: Gateway[] = []
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.stop()))
    await redis.stop()
  }
  try {
    const env = { ...o.env, REDIS_URL: redis.url, REDIS_PREFIX: 'bench:' }
    // one after the other: the second node finds the bootstrap records the first one wrote
    nodes.push(await startGateway({ ...o, env, name: `${name}-a` }))
    nodes.push(await startGateway({ ...o, env, name: `${name}-b` }))
  } catch (e) {
    await stop()
    throw e
  }
  const sum = (f: (pid: number) => number | undefined) =>
    [...nodes.map((n) => n.pid), redis.pid].reduce((t, pid) => t + (f(pid) ?? 0), 0)
  return {
    backend,
    label: 'redis (2 nodes)',
    publishTo: nodes[0]!,
    subscribeTo: nodes[1]!,
    nodes,
    redis,
    key: nodes[0]!.key,
    cpuSeconds: () => sum(cpuSeconds),
    rssBytes: () => nodes.reduce((t, n) => t + (rssBytes(n.pid) ?? 0), 0),
    stop,
  }
}
