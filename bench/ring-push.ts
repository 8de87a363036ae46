/**
 * The channel ring's pushes in a loop, this checkout's ring against another one's in the same
 * process (`BENCH_GATEWAY_DIR=<checkout before> bun bench/ring-push.ts [--pushes 3000000]
 * [--rounds 3] [--rings 100]`; without BENCH_GATEWAY_DIR both sides are this checkout): 100 rings
 * (`--rings`) with the embedded broker's default retention (RING_SIZE 2,000, RESUME_WINDOW_MS
 * 15,000, RING_MAX_BYTES 16 MiB), a REST-sized message (a 100-byte JSON text) pushed to each in
 * turn, 380 messages a second per ring (38 a millisecond over 100 rings: ~5,700 held at the steady
 * size, which 100 rings reach early in the run; 1,000 rings are mostly still growing).
 * Sides alternated round by round; reports ms per run and ns per push. `--read`: the rings filled
 * once (200,000 pushes), then every message they hold read back, `--pushes` reads in all.
 */
import { join } from 'node:path'
import { parseFlags } from './lib/args'
import { benchSides } from './lib/in-process-node'
import { alternatedRuns } from './lib/alternation'

const f = parseFlags(process.argv.slice(2), { pushes: 'number', rounds: 'number', rings: 'number', read: 'boolean' })
const pushes = f.pushes ?? 3_000_000
const count = f.rings ?? 100
const sides = benchSides()
const policy = { minCount: 2000, windowMs: 15_000, maxBytes: 16 * 1024 * 1024 }
const data = JSON.stringify({ v: 'x'.repeat(80) })

type RingClass = new (
  retention: typeof policy,
  floor: string,
  codec: unknown,
) => {
  push(m: object, ms?: number, seq?: number): void
  at(i: number): object
  readonly size: number
}
const loaded: Record<string, { Ring: RingClass; codec: unknown; formatSerial: (ms: number, seq: number) => string }> =
  {}
for (const [name, root] of Object.entries(sides)) {
  const { Ring } = await import(join(root, 'src/backend/shared/ring.ts'))
  const { ringCodec } = await import(join(root, 'src/backend/shared/ring-codec.ts'))
  const { formatSerial } = await import(join(root, 'src/core/model/serial.ts'))
  loaded[name] = { Ring, codec: ringCodec, formatSerial }
}

function filled(side: string) {
  const { Ring, codec, formatSerial } = loaded[side]!
  const rings = Array.from({ length: count }, () => new Ring(policy, '0', codec))
  const push = (i: number) => {
    const ts = 1_000_000 + Math.floor((i * 100) / count / 38)
    const m = { id: `abcdefghijklmnop:${i}:0`, name: 'bench', data, serial: formatSerial(ts, i), timestamp: ts }
    rings[i % count]!.push(m, ts, i)
  }
  return { rings, push }
}

function run(side: string): number {
  const { push } = filled(side)
  Bun.gc(true)
  const t0 = performance.now()
  for (let i = 0; i < pushes; i++) push(i)
  return performance.now() - t0
}

/** `--read`: every message the rings hold read back (as history, resume and rewind do), over and over. */
const reads: Record<string, ReturnType<typeof filled>['rings']> = {}
function read(side: string): number {
  const rings = (reads[side] ??= (() => {
    const { rings, push } = filled(side)
    for (let i = 0; i < 200_000; i++) push(i)
    return rings
  })())
  Bun.gc(true)
  const t0 = performance.now()
  let n = 0
  while (n < pushes)
    for (const r of rings) {
      const size = r.size
      for (let i = 0; i < size; i++) r.at(i)
      n += size
    }
  return performance.now() - t0
}

if (f.read) await alternatedRuns(f.rounds ?? 3, pushes, 'read', read)
else await alternatedRuns(f.rounds ?? 3, pushes, 'push', run)
process.exit(0)
