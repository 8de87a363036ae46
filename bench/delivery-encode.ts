/**
 * A delivered batch's encoding for its subscribers, in a loop, this checkout's against another
 * one's in the same process (`BENCH_GATEWAY_DIR=<checkout before> bun bench/delivery-encode.ts
 * [--batches 1000000] [--rounds 4] [--channels 100] [--subscribers 1]`; without BENCH_GATEWAY_DIR
 * both sides are this checkout). Each of `--channels` channels has `--subscribers` event-stream
 * connections (plain SSE, one channel each, their socket a stub that takes every write) and as
 * many realtime sockets' worth of frames (`batchFrames`, JSON); a fresh one-message batch (a
 * REST-sized message) is delivered to one channel after another, as the hub hands out a turn's
 * batches, the turn ending (its microtasks run) after one batch per channel. Sides alternated round by round; reports ns per batch (all its subscribers).
 */
import { join } from 'node:path'
import { parseFlags } from './lib/args'
import { benchSides } from './lib/in-process-node'
import { alternatedRuns } from './lib/alternation'

const f = parseFlags(process.argv.slice(2), {
  batches: 'number',
  rounds: 'number',
  channels: 'number',
  subscribers: 'number',
})
const batches = f.batches ?? 1_000_000
const channels = f.channels ?? 100
const perChannel = f.subscribers ?? 1
const sides = benchSides()
const data = JSON.stringify({ v: 'x'.repeat(80) })

interface Side {
  Connection: new (o: object) => { deliver(index: number, batch: object[]): boolean }
  batchFrames: (batch: object[], channel: string, format: string) => unknown[]
}
const loaded: Record<string, Side> = {}
for (const [name, root] of Object.entries(sides)) {
  const { EventStreamConnection } = await import(join(root, 'src/api/sse/connection.ts'))
  const { batchFrames } = await import(join(root, 'src/api/realtime/frames.ts'))
  loaded[name] = { Connection: EventStreamConnection, batchFrames }
}

/** A connection whose stream has begun, writing into a stub that takes everything. */
function connection(side: Side, channel: string) {
  const c = new side.Connection({
    mode: 'sse',
    enveloped: false,
    heartbeats: false,
    channels: [channel],
    hash: 'h',
    budget: 1 << 20,
    stallMs: 60_000,
    now: () => 0,
    onClose: () => {},
  }) as unknown as { controller: unknown; deliver(index: number, batch: object[]): boolean }
  c.controller = { write: (chunk: string | Uint8Array) => chunk.length, flush: () => {}, close: () => {} }
  return c
}

let sink = 0
async function run(name: string): Promise<number> {
  const side = loaded[name]!
  const names = Array.from({ length: channels }, (_, i) => `bench-${i}`)
  const subs = names.map((ch) => Array.from({ length: perChannel }, () => connection(side, ch)))
  Bun.gc(true)
  const t0 = performance.now()
  for (let i = 0; i < batches; i++) {
    const c = i % channels
    const serial = `0${1_700_000_000_000 + i}-000`
    const batch = [{ id: `abcdefghijklmnop:${i}:0`, name: 'bench', data, serial, timestamp: 1 }]
    for (const s of subs[c]!) s.deliver(0, batch)
    for (let k = 0; k < perChannel; k++) sink += side.batchFrames(batch, names[c]!, 'json').length
    if (c === channels - 1) await Promise.resolve() // a turn ends: its microtasks run
  }
  return performance.now() - t0
}

await alternatedRuns(f.rounds ?? 4, batches, 'batch', run)
if (sink < 0) console.log(sink) // the frames are used
process.exit(0)
