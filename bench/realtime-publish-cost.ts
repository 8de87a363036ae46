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
 */
import { join } from 'node:path'
import { Packr } from 'msgpackr'
import { parseFlags } from './lib/args'
import { pairedBlocks } from './lib/alternation'
import { BENCH_KEY } from './lib/targets'
import { benchSides, inProcessNode, removeNodeDirs } from './lib/in-process-node'

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
const packr = new Packr({ useRecords: false })
const unpackr = new Packr({ useRecords: false, mapsAsObjects: true })

interface Handlers {
  open(ws: FakeSocket): void
  message(ws: FakeSocket, frame: ArrayBuffer): void
}

/** What `SocketTransport` uses of Bun's ServerWebSocket; counts the ACKed messages it is sent. */
class FakeSocket {
  readyState = 1
  binaryType = 'nodebuffer'
  acked = 0
  connected = false
  nextSerial = 0
  constructor(readonly data: object) {}
  send(frame: Uint8Array | string): number {
    const pm = unpackr.unpack(frame as Uint8Array) as { action: number; count?: number; error?: unknown }
    if (pm.action === 4) this.connected = true
    else if (pm.action === 1) this.acked += pm.count!
    else if (pm.action === 2 || pm.action === 9) throw new Error(`refused: ${JSON.stringify(pm)}`)
    return 1
  }
  getBufferedAmount = () => 0
  close() {}
  terminate() {}
  ping() {}
}

const sockets: Record<string, FakeSocket[]> = {}
const handlers: Record<string, Handlers> = {}
for (const [name, root] of Object.entries(sides)) {
  const { realtime, connectParams } = await import(join(root, 'src/api/realtime/index.ts'))
  const { config, node } = await inProcessNode(root, !!f['rate-limits'])
  const rt = realtime(node.core, config, node.log)
  handlers[name] = rt.websocket
  const url = new URL(`http://127.0.0.1/?key=${encodeURIComponent(BENCH_KEY)}&format=msgpack&heartbeats=false&v=6`)
  const list = (sockets[name] = Array.from({ length: connections }, () => {
    const { format, ...params } = connectParams(url, new Request(url))
    return new FakeSocket({ params, format })
  }))
  for (const ws of list) rt.websocket.open(ws)
  while (!list.every((ws) => ws.connected)) await Bun.sleep(5)
}

let n = 0
const frame = (ws: FakeSocket): ArrayBuffer => {
  const bytes = packr.pack({
    action: 15,
    channel: `bench-${n++ % 100}`,
    msgSerial: ws.nextSerial++,
    messages: [{ name: 'bench', data: 'x'.repeat(74) }],
  })
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer
}

const turn = () => new Promise<void>((r) => setImmediate(r))

async function block(side: string): Promise<number> {
  const list = sockets[side]!
  const h = handlers[side]!
  const turns = Math.ceil(perBlock / (connections * pipeline))
  const frames = Array.from({ length: turns }, () =>
    list.map((ws) => Array.from({ length: pipeline }, () => frame(ws))),
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
