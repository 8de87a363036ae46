/**
 * Heap objects the gateway makes per publish, by JavaScriptCore type, on the embedded backend, of
 * this checkout and of another (`BENCH_GATEWAY_DIR=<checkout before> bun bench/publish-allocations.ts
 * [--messages 1000] [--redis redis://127.0.0.1:6379]`, the Redis backend on that server): a realtime MESSAGE (the WebSocket handlers of `realtime()`, 50 connections
 * × 4 frames a turn, until every ACK is written) and a REST publish (the native publish route, 50
 * in flight, JSON). Counted as what `heapStats()` finds more after the publishes than after a
 * full collection before them, the frames and requests made beforehand: exact and independent of
 * the machine's load, as long as no collection runs in between (the messages are few enough for
 * that: the median of 7 tries is taken, and a count that fell is reported). Rings are kept short
(RING_SIZE=50, no resume window), so that a ring's growth is not counted as the publish's. Garbage per publish is what the
 * collector's threads and the allocator work through (see docs/performance.md, realtime publish).
 */
import { heapStats } from 'bun:jsc'
import { parseFlags } from './lib/args'
import { benchSides, removeNodeDirs } from './lib/in-process-node'
import { publishAll, publishRequest, restRoute } from './lib/in-process-rest'
import { messageFrame, realtimeNode, turn } from './lib/in-process-realtime'

const f = parseFlags(process.argv.slice(2), { messages: 'number', redis: 'string' })
const messages = f.messages ?? 1000
const CONNECTIONS = 50
const PIPELINE = 4
const REPEATS = 7
const SHORT_RINGS = { RING_SIZE: '50', RESUME_WINDOW_MS: '0' }
/** Each side's own keys on the one redis-server of `--redis` (its accounts, channels and batches). */
const envOf = (side: string): Record<string, string> =>
  f.redis ? { ...SHORT_RINGS, REDIS_URL: f.redis, REDIS_PREFIX: `allocations-${process.pid}-${side}:` } : SHORT_RINGS
const sides = benchSides()

type Counts = Record<string, number>
const counts = (): Counts => ({ ...heapStats().objectTypeCounts })

const total = (c: Counts) => Object.values(c).reduce((a, b) => a + b, 0)

/**
 * Objects per publish of `run` (which makes `n` publishes), by type; `run` gets its inputs made
 * first. The median of REPEATS tries by total: a collection the runtime starts during a try (a
 * young generation filling up) takes objects off its count.
 */
async function perPublish<I>(prepare: () => I, run: (input: I) => Promise<void>, n: number): Promise<Counts> {
  const tries: Counts[] = []
  for (let i = 0; i < REPEATS; i++) {
    const input = prepare()
    Bun.gc(true)
    const before = counts()
    await run(input)
    const after = counts()
    const out: Counts = {}
    for (const [type, c] of Object.entries(after)) {
      const d = (c - (before[type] ?? 0)) / n
      if (d !== 0) out[type] = d
    }
    tries.push(out)
  }
  return tries.sort((a, b) => total(a) - total(b))[REPEATS >> 1]!
}

/** Objects per realtime MESSAGE (the ACKs written, not read back: the harness's decoding is not counted). */
async function realtimeCounts(side: string, root: string): Promise<Counts> {
  const { handlers, sockets } = await realtimeNode(root, CONNECTIONS, false, envOf(side))
  const turns = Math.ceil(messages / (CONNECTIONS * PIPELINE))
  const realtimeRun = async (frames: ArrayBuffer[][][]) => {
    for (const t of frames) {
      for (let c = 0; c < sockets.length; c++) for (const fr of t[c]!) handlers.message(sockets[c]!, fr)
      await turn()
    }
    await turn()
  }
  const framesOf = () =>
    Array.from({ length: turns }, () => sockets.map((ws) => Array.from({ length: PIPELINE }, () => messageFrame(ws))))
  for (let i = 0; i < 20; i++) await realtimeRun(framesOf()) // warm-up: the JIT settles
  // the ACKs are written (packed) but not read back here: the harness's own decoding is not counted
  for (const ws of sockets) ws.send = () => 1
  return perPublish(framesOf, realtimeRun, turns * CONNECTIONS * PIPELINE)
}

/** Objects per REST publish (JSON, 50 in flight, each answered). */
async function restCounts(side: string, root: string): Promise<Counts> {
  const route = await restRoute(root, false, envOf(`${side}-rest`))
  const requestsOf = () => Array.from({ length: messages }, publishRequest)
  const restRun = (requests: Request[]) => publishAll(route, requests)
  for (let i = 0; i < 5; i++) await restRun(requestsOf())
  return perPublish(requestsOf, restRun, messages)
}

// the realtime run waits a turn for the ACKs: on Redis they come later, so REST only there
const results: Record<string, { realtime?: Counts; rest: Counts }> = {}
for (const [side, root] of Object.entries(sides))
  results[side] = {
    realtime: f.redis ? undefined : await realtimeCounts(side, root),
    rest: await restCounts(side, root),
  }

for (const kind of ['realtime', 'rest'] as const) {
  const [b, a] = [results.before![kind], results.after![kind]]
  if (!b || !a) continue
  console.log(
    `${kind === 'realtime' ? 'realtime MESSAGE' : 'REST publish (JSON)'}: objects per publish, before ${total(b).toFixed(2)}, after ${total(a).toFixed(2)}`,
  )
  const types = [...new Set([...Object.keys(b), ...Object.keys(a)])].sort((x, y) => (a[y] ?? 0) - (a[x] ?? 0))
  for (const t of types)
    if (Math.abs(b[t] ?? 0) >= 0.05 || Math.abs(a[t] ?? 0) >= 0.05)
      console.log(`  ${t.padEnd(28)} ${(b[t] ?? 0).toFixed(2).padStart(7)} ${(a[t] ?? 0).toFixed(2).padStart(7)}`)
  if (Object.values({ ...b, ...a }).some((v) => v < -0.05))
    console.log('  (a count fell: a collection ran during every try; take fewer --messages)')
}
removeNodeDirs()
process.exit(0)
