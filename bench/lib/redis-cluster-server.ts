/**
 * A private Redis Cluster of M masters (no replicas) for the scale scenario: M cluster-enabled
 * redis-server processes on free ports, no persistence, the 16384 slots split evenly
 * (CLUSTER ADDSLOTSRANGE) and the nodes joined (CLUSTER MEET), so that any M from 1 up works
 * (redis-cli --cluster create, as test/helpers/redis-cluster.ts uses, wants 3 masters at least).
 * Tracked and stopped like every other child.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, spawnTracked, stopProcess } from './processes'

export interface RedisClusterServer {
  /** The seed nodes, as REDIS_URL takes them with REDIS_CLUSTER=true. */
  url: string
  pids: number[]
  stop(): Promise<void>
}

const SLOTS = 16384

function cli(port: number, ...args: string[]): string {
  const bin = Bun.which('redis-cli')
  if (!bin) throw new Error('redis-cli not found on PATH (apt-get install redis-tools)')
  const r = Bun.spawnSync([bin, '-h', '127.0.0.1', '-p', String(port), ...args])
  const out = r.stdout.toString()
  if (r.exitCode !== 0 || /^ERR/m.test(out)) throw new Error(`redis-cli ${args.join(' ')}: ${out}${r.stderr}`)
  return out
}

export async function startRedisCluster(
  logDir: string,
  masters: number,
  name = 'redis-cluster',
): Promise<RedisClusterServer> {
  const bin = Bun.which('redis-server')
  if (!bin) throw new Error('redis-server not found on PATH (apt-get install redis-server)')
  const dir = mkdtempSync(join(tmpdir(), 'bench-redis-cluster-'))
  const ports: number[] = []
  // a cluster node also listens on port + 10000 (the cluster bus)
  while (ports.length < masters) {
    const p = freePort()
    if (p < 55000 && !ports.includes(p)) ports.push(p)
  }
  const procs = ports.map((port, i) =>
    spawnTracked(
      [
        bin,
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        // the address every node gives in CLUSTER SLOTS (one alone in its cluster would give none)
        '--cluster-announce-ip',
        '127.0.0.1',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--save',
        '',
        '--appendonly',
        'no',
        '--protected-mode',
        'no',
        '--dir',
        dir,
      ],
      { stdout: join(logDir, `${name}-${i + 1}.log`), stderr: join(logDir, `${name}-${i + 1}.err.log`) },
    ),
  )
  const stop = async () => {
    await Promise.all(procs.map((p) => stopProcess(p)))
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    for (const p of ports) await until(() => cli(p, 'PING').trim() === 'PONG', `redis-server on ${p} did not start`)
    ports.forEach((p, i) => {
      const from = Math.floor((i * SLOTS) / masters)
      const to = Math.floor(((i + 1) * SLOTS) / masters) - 1
      cli(p, 'CLUSTER', 'ADDSLOTSRANGE', String(from), String(to))
    })
    for (const p of ports.slice(1)) cli(ports[0]!, 'CLUSTER', 'MEET', '127.0.0.1', String(p))
    await until(
      () => ports.every((p) => cli(p, 'CLUSTER', 'INFO').includes('cluster_state:ok')),
      'the Redis Cluster did not reach cluster_state:ok',
    )
  } catch (e) {
    await stop()
    throw e
  }
  return { url: ports.map((p) => `redis://127.0.0.1:${p}`).join(','), pids: procs.map((p) => p.pid), stop }
}

async function until(ok: () => boolean, message: string, timeoutMs = 30_000) {
  const end = Date.now() + timeoutMs
  for (;;) {
    try {
      if (ok()) return
    } catch {
      // not yet
    }
    if (Date.now() > end) throw new Error(message)
    await Bun.sleep(50)
  }
}
