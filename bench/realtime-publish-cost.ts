/**
 * In-process CPU per realtime MESSAGE (the WebSocket handlers of `realtime()`, the connection,
 * the core's publish and the ACK on the embedded backend) of this checkout against another one's
 * in the same process, alternated block by block: `BENCH_GATEWAY_DIR=<checkout before> bun
 * bench/realtime-publish-cost.ts [--blocks 40] [--per-block 20000] [--connections 50]
 * [--pipeline 4] [--rate-limits]` (rate limits on, nothing refused: every message charged).
 * Without BENCH_GATEWAY_DIR both sides are this checkout (the harness's own bias: expect a ratio
 * near 1). Each side has its own node (its own modules, loaded from its own path)
 * and its own connections on sockets of this file that count what they are sent. A turn hands
 * every connection `--pipeline` frames, the msgpack MESSAGE of `bench/run.ts realtime-publish`
 * (100-byte data, 100 channels), then waits for the ACKs, as the server sees them. The frames are
 * packed outside the measured blocks. Figures: process CPU (user + system) per message, median
 * of the blocks, and the median of the paired ratios. No socket's system calls are in it: what it
 * shows is the gateway's own JavaScript.
 * Runs with the gateway's allocator settings (begun again for them: lib/gateway-allocator.ts).
 */
import { parseFlags } from './lib/args'
import { pairedBlocks } from './lib/alternation'
import { benchSides, removeNodeDirs } from './lib/in-process-node'
import { messageFrame, realtimeNode, turn, type FakeSocket, type Handlers } from './lib/in-process-realtime'
import { beginWithGatewayAllocator } from './lib/gateway-allocator'

beginWithGatewayAllocator()

const f = parseFlags(process.argv.slice(2), {
  blocks: 'number',
  'per-block': 'number',
  connections: 'number',
  pipeline: 'number',
  'rate-limits': 'boolean',
})
const blocks = f.blocks ?? 40
const perBlock = f['per-block'] ?? 20_000
const connections = f.connections ?? 50
const pipeline = f.pipeline ?? 4
const sides = benchSides()

const sockets: Record<string, FakeSocket[]> = {}
const handlers: Record<string, Handlers> = {}
for (const [name, root] of Object.entries(sides)) {
  const rt = await realtimeNode(root, connections, !!f['rate-limits'])
  handlers[name] = rt.handlers
  sockets[name] = rt.sockets
}

async function block(side: string): Promise<number> {
  const list = sockets[side]!
  const h = handlers[side]!
  const turns = Math.ceil(perBlock / (connections * pipeline))
  const frames = Array.from({ length: turns }, () =>
    list.map((ws) => Array.from({ length: pipeline }, () => messageFrame(ws))),
  )
  const expected = list.map((ws) => ws.acked + turns * pipeline)
  Bun.gc(true) // each block starts from a collected heap: what it collects is what it made
  const cpu = process.cpuUsage()
  for (const t of frames) {
    for (let c = 0; c < list.length; c++) for (const fr of t[c]!) h.message(list[c]!, fr)
    await turn()
  }
  while (list.some((ws, i) => ws.acked < expected[i]!)) await turn()
  const used = process.cpuUsage(cpu)
  return (used.user + used.system) / (turns * connections * pipeline)
}

for (const side of Object.keys(sides)) for (let i = 0; i < 15; i++) await block(side) // warm-up: the JIT settles
await pairedBlocks(`CPU µs per realtime message (blocks of ${perBlock})`, blocks, sides, (side) => block(side))
removeNodeDirs()
process.exit(0)
