/**
 * A private Redis Cluster of M masters (no replicas) for the scale scenario, formed by the code
 * `npm run cluster` runs (tools/redis-cluster.ts): M cluster-enabled redis-server processes on free
 * ports, no persistence, the 16384 slots split evenly, so that any M from 1 up works. Its nodes are
 * tracked and stopped like every other child; their output goes to the run's log folder.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { LocalRedisCluster } from '../../tools/redis-cluster'
import { spawnTracked } from './processes'

export interface RedisClusterServer {
  /** The seed nodes, as REDIS_URL takes them with REDIS_CLUSTER=true. */
  url: string
  pids: number[]
  stop(): Promise<void>
}

export async function startRedisCluster(
  logDir: string,
  masters: number,
  name = 'redis-cluster',
): Promise<RedisClusterServer> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-redis-cluster-'))
  let i = 0
  const cluster = await LocalRedisCluster.start({
    dir,
    masters,
    replicas: 0,
    persist: false,
    spawn: (argv) => {
      i++
      return spawnTracked(argv, {
        stdout: join(logDir, `${name}-${i}.log`),
        stderr: join(logDir, `${name}-${i}.err.log`),
      })
    },
  })
  return {
    url: cluster.url,
    pids: cluster.pids,
    stop: async () => {
      await cluster.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
