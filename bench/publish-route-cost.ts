/**
 * In-process CPU per REST publish of the native publish route (`publishRoute`: the HTTP layer and
 * the core's publish on the embedded backend, or with `--redis <url>` on that redis-server, whose
 * own CPU is not counted), of this checkout against another one's in the same process, alternated
 * block by block: `BENCH_GATEWAY_DIR=<checkout before> bun bench/publish-route-cost.ts [--blocks
 * 40] [--per-block 4000] [--redis redis://127.0.0.1:6379] [--rate-limits]` (rate limits on,
 * nothing refused: every publish charged). Without BENCH_GATEWAY_DIR both
 * sides are this checkout (the harness's own bias: expect a ratio near 1). Each side has its own
 * node (its own modules, loaded from its own path); the requests, the same for both, are made
 * outside the measured blocks, 50 in flight as the server sees them. Figures: process CPU
 * (user + system) per publish, median of the blocks, and the median of the paired ratios.
 */
import { join } from 'node:path'
import { parseFlags } from './lib/args'
import { pairedBlocks } from './lib/alternation'
import { BENCH_KEY } from './lib/targets'
import { benchSides, inProcessNode, removeNodeDirs } from './lib/in-process-node'

const f = parseFlags(process.argv.slice(2), {
  blocks: 'number',
  'per-block': 'number',
  redis: 'string',
  'rate-limits': 'boolean',
})
const blocks = f.blocks ?? 40
const perBlock = f['per-block'] ?? 4000
const INFLIGHT = 50
const sides = benchSides()

type Route = (req: Request, server: unknown) => Promise<Response>
const routes: Record<string, Route> = {}
for (const [name, root] of Object.entries(sides)) {
  const { publishHandler, publishRoute } = await import(join(root, 'src/api/channels/publish-endpoint.ts'))
  const { CorsPolicy } = await import(join(root, 'src/api/http/cors.ts'))
  // each side its own key prefix on the one redis-server (its own accounts, channels and batches)
  const redis: Record<string, string> = f.redis
    ? { REDIS_URL: f.redis, REDIS_PREFIX: `route-cost-${process.pid}-${name}:` }
    : {}
  const { config, node } = await inProcessNode(root, !!f['rate-limits'], redis)
  routes[name] = publishRoute(publishHandler(node.core, config, node.log), new CorsPolicy([]), node.log)
}

// what wrk sends in `bench/run.ts publish`: Basic auth, a 100-byte JSON message, 100 channels
const body = JSON.stringify({ name: 'bench', data: 'x'.repeat(74) })
const headers = {
  authorization: 'Basic ' + Buffer.from(BENCH_KEY).toString('base64'),
  'content-type': 'application/json',
  accept: 'application/json',
  'x-ably-version': '6',
  'ably-agent': 'ably-js/2.28.0 bench',
  'content-length': String(body.length),
}
let n = 0
const request = () =>
  new Request(`http://127.0.0.1:8080/channels/bench-${n++ % 100}/messages`, { method: 'POST', headers, body })
const server = { requestIP: () => null }

async function block(route: Route): Promise<number> {
  const requests = Array.from({ length: perBlock }, request)
  const cpu = process.cpuUsage()
  for (let i = 0; i < perBlock; i += INFLIGHT) {
    const answers = await Promise.all(requests.slice(i, i + INFLIGHT).map((r) => route(r, server)))
    if (answers[0]!.status !== 201) throw new Error(`status ${answers[0]!.status}: ${await answers[0]!.text()}`)
  }
  const used = process.cpuUsage(cpu)
  return (used.user + used.system) / perBlock
}

for (const route of Object.values(routes)) for (let i = 0; i < 5; i++) await block(route) // warm-up
await pairedBlocks(`CPU µs per publish (blocks of ${perBlock})`, blocks, sides, (side) => block(routes[side]!))
removeNodeDirs()
process.exit(0)
