/**
 * The node's CPU per publish of the Redis broker with a local subscriber on every channel, in
 * process (no HTTP): each publish appended, answered, and delivered to this node's listener, as
 * in `bench/run.ts scale` without the HTTP layers. `bun bench/broker-delivery-cost.ts [--cluster]
 * [--shards 1] [--apart] [--publishers 4] [--channels 100] [--blocks 20] [--per-block 4000] [dir[@skip] ...]`: each code tree
 * named (a checkout with node_modules linked; this one when none is named; `@skip`: that tree with
 * REDIS_SKIP_OWN_NOTIFICATIONS on, so one tree can be named twice) gets its own broker
 * (own key prefix) on one private redis-server (or a Redis Cluster of --shards masters, 1 by default, with --cluster);
 * blocks alternate between the trees. With --apart each tree runs two nodes (two brokers in this
 * process): one publishes, the other holds the subscriptions, so every delivery comes from a
 * notification read and decoded, as between the processes of a deployment; the CPU is both's. P publishers each publish one 100-byte message at a time
 * (the next once the last is answered AND delivered), so batches stay as small as through HTTP.
 * Prints per tree the median and spread of this process's CPU µs per publish, and each block's
 * ratio to the first tree's, and the median of the redis-servers' CPU µs per publish. Asserts nothing beyond every publish delivered once.
 * Runs with the gateway's allocator settings (begun again for them: lib/gateway-allocator.ts).
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseFlags } from './lib/args'
import { installCleanup } from './lib/processes'
import { redisBenchSettings } from './lib/redis-backend-of'
import { startRedis } from './lib/redis-server'
import { startRedisCluster } from './lib/redis-cluster-server'
import type { Backend } from '../src/backend/backend'
import { cpuSeconds } from './lib/cpu'
import { beginWithGatewayAllocator } from './lib/gateway-allocator'

beginWithGatewayAllocator()

const f = parseFlags(process.argv.slice(2), {
  cluster: 'boolean',
  shards: 'number',
  apart: 'boolean',
  publishers: 'number',
  channels: 'number',
  blocks: 'number',
  'per-block': 'number',
})
const PUBLISHERS = f.publishers ?? 4
const CHANNELS = f.channels ?? 100
const BLOCKS = f.blocks ?? 20
const PER_BLOCK = f['per-block'] ?? 4000
const named: string[] = f._.length ? f._ : [resolve(import.meta.dir, '..')]
const SKIP = '@skip'
const namedTrees = named.map((n) => ({
  name: n,
  dir: resolve(n.endsWith(SKIP) ? n.slice(0, -SKIP.length) : n),
  skip: n.endsWith(SKIP),
}))

installCleanup()
const logDir = mkdtempSync(join(tmpdir(), 'broker-delivery-cost-'))
const server = f.cluster ? await startRedisCluster(logDir, f.shards ?? 1) : await startRedis(logDir)
const redisPids = 'pids' in server ? server.pids : [server.pid]
/** CPU seconds the redis-servers used so far. */
const redisCpu = () => redisPids.reduce((sum, pid) => sum + (cpuSeconds(pid) ?? 0), 0)
interface Tree {
  /** As named (with `@skip`). */
  name: string
  backend: Backend
  /** The node holding the subscriptions (the publishing one but with --apart). */
  listening: Backend
  us: number[]
  /** Of which system (kernel) CPU. */
  sys: number[]
  /** The redis-servers' CPU µs per publish. */
  redis: number[]
  delivered: number
  waiting: Map<string, () => void>
}
const trees: Tree[] = []
for (const [i, { name, dir, skip }] of namedTrees.entries()) {
  const { createRedisBackend } = await import(`${dir}/src/backend/redis/index.ts`)
  const settings = {
    ...redisBenchSettings(server.url, `dc${i}:`),
    redisCluster: !!f.cluster,
    redisSkipOwnNotifications: skip,
  }
  const backend = (await createRedisBackend(settings, (e: unknown) => console.error(dir, e))) as Backend
  const listening = f.apart
    ? ((await createRedisBackend(settings, (e: unknown) => console.error(dir, e))) as Backend)
    : backend
  const t: Tree = { name, backend, listening, us: [], sys: [], redis: [], delivered: 0, waiting: new Map() }
  for (let c = 0; c < CHANNELS; c++)
    listening.broker.subscribe('app', `dc-${c}`, (_a, _c, ms) => {
      for (const m of ms) {
        t.delivered++
        const w = t.waiting.get(m.id)
        if (w) {
          t.waiting.delete(m.id)
          w()
        }
      }
    })
  trees.push(t)
}
await Bun.sleep(500)

const data = 'x'.repeat(74)
let seq = 0
async function block(t: Tree): Promise<{ us: number; sys: number; redis: number }> {
  let left = PER_BLOCK
  const redis0 = redisCpu()
  const cpu = process.cpuUsage()
  await Promise.all(
    Array.from({ length: PUBLISHERS }, async () => {
      while (left-- > 0) {
        const s = seq++
        const id = `p:${s}:0`
        const delivered = new Promise<void>((r) => t.waiting.set(id, r))
        await t.backend.broker.publish('app', `dc-${s % CHANNELS}`, [{ id, name: 'bench', data }], {
          persisted: false,
        })
        await delivered
      }
    }),
  )
  const used = process.cpuUsage(cpu)
  return {
    us: (used.user + used.system) / PER_BLOCK,
    sys: used.system / PER_BLOCK,
    redis: ((redisCpu() - redis0) * 1e6) / PER_BLOCK,
  }
}

for (const t of trees) for (let i = 0; i < 3; i++) await block(t) // warm-up
for (let b = 0; b < BLOCKS; b++) {
  const order = b % 2 ? [...trees].reverse() : trees
  for (const t of order) {
    const r = await block(t)
    t.us.push(r.us)
    t.sys.push(r.sys)
    t.redis.push(r.redis)
  }
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
for (const t of trees) {
  const ratios = t.us.map((u, i) => u / trees[0]!.us[i]!)
  console.log(
    `${t.name}: ${median(t.us).toFixed(1)} us per publish, ${median(t.sys).toFixed(1)} of it system (min ${Math.min(...t.us).toFixed(1)}, max ${Math.max(...t.us).toFixed(1)}); ÷ first tree, median of blocks ${median(ratios).toFixed(3)}; redis-server ${median(t.redis).toFixed(1)} us per publish; delivered ${t.delivered}`,
  )
}
for (const t of trees) {
  await t.backend.close()
  if (t.listening !== t.backend) await t.listening.close()
}
await server.stop()
process.exit(0)
