/**
 * In-process CPU per REST publish of the native publish route (`publishRoute`: the HTTP layer and
 * the core's publish on the embedded backend, or with `--redis <url>` on that redis-server, whose
 * own CPU is not counted), of this checkout against another one's in the same process, alternated
 * block by block: `BENCH_GATEWAY_DIR=<checkout before> bun bench/publish-route-cost.ts [--blocks
 * 40] [--per-block 4000] [--redis redis://127.0.0.1:6379 | --cluster] [--rate-limits]` (`--cluster`:
 * a private 1-master Redis Cluster; rate limits on, nothing refused: every publish charged).
 * Without BENCH_GATEWAY_DIR both
 * sides are this checkout (the harness's own bias: expect a ratio near 1). Each side has its own
 * node (its own modules, loaded from its own path); the requests, the same for both, are made
 * outside the measured blocks, 50 in flight as the server sees them. Figures: process CPU
 * (user + system) per publish, median of the blocks, and the median of the paired ratios.
 * Runs with the gateway's allocator settings (begun again for them: lib/gateway-allocator.ts).
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseFlags } from './lib/args'
import { installCleanup } from './lib/processes'
import { startRedisCluster } from './lib/redis-cluster-server'
import { pairedBlocks } from './lib/alternation'
import { benchSides, removeNodeDirs } from './lib/in-process-node'
import { publishAll, publishRequest, restRoute, type Route } from './lib/in-process-rest'
import { beginWithGatewayAllocator } from './lib/gateway-allocator'

beginWithGatewayAllocator()

const f = parseFlags(process.argv.slice(2), {
  blocks: 'number',
  'per-block': 'number',
  redis: 'string',
  cluster: 'boolean',
  'rate-limits': 'boolean',
})
const blocks = f.blocks ?? 40
const perBlock = f['per-block'] ?? 4000
const INFLIGHT = 50
const sides = benchSides()

installCleanup()
const cluster = f.cluster ? await startRedisCluster(mkdtempSync(join(tmpdir(), 'publish-route-cost-')), 1) : undefined
const url = cluster?.url ?? f.redis
const routes: Record<string, Route> = {}
for (const [name, root] of Object.entries(sides)) {
  // each side its own key prefix on the one redis-server (its own accounts, channels and batches)
  const redis: Record<string, string> = url
    ? { REDIS_URL: url, REDIS_CLUSTER: String(!!cluster), REDIS_PREFIX: `route-cost-${process.pid}-${name}:` }
    : {}
  routes[name] = await restRoute(root, !!f['rate-limits'], redis)
}

async function block(route: Route): Promise<number> {
  const requests = Array.from({ length: perBlock }, publishRequest)
  const cpu = process.cpuUsage()
  await publishAll(route, requests, INFLIGHT)
  const used = process.cpuUsage(cpu)
  return (used.user + used.system) / perBlock
}

for (const route of Object.values(routes)) for (let i = 0; i < 5; i++) await block(route) // warm-up
await pairedBlocks(`CPU µs per publish (blocks of ${perBlock})`, blocks, sides, (side) => block(routes[side]!))
removeNodeDirs()
await cluster?.stop()
process.exit(0)
