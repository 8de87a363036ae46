/**
 * Subscriber process of the event-stream scenarios (an agent, see lib/agent.ts): holds many
 * event streams on raw `Bun.connect` sockets (GET written by hand, optionally from several
 * loopback source addresses), counts `message` records and checks, per subscriber and publisher
 * lane, that sequence numbers arrive exactly once and in order (sse-stream-parser.ts,
 * sequence-payload.ts). Streams may be grouped (each group its own channels, key and lanes). In
 * latency mode it also records publish-to-delivery times. Driven by lib/sse-subscriber-client.ts.
 */
import type { Socket } from 'bun'
import { serveAgent } from './lib/agent'
import { wallMicros } from './lib/sequence-payload'
import { SseStreamParser, type SseSink } from './lib/sse-stream-parser'

export interface OpenArgs {
  host: string
  port: number
  /** Request target of every stream, e.g. `/sse?v=1.2&channels=c&key=...` (unless `groups`). */
  path: string
  count: number
  /**
   * Streams of different channels: stream i of this process belongs to group (first + i) % groups.length,
   * opens that group's path and must receive exactly the messages of its lanes (publisher ids).
   * Without groups every stream must receive every lane 0 .. publishers-1.
   */
  groups?: Array<{ path: string; lanes: number[] }>
  /** Index of this process's first stream among all processes (default 0). */
  first?: number
  /** Local addresses to connect from, used round robin (empty: the OS picks). */
  sources: string[]
  /** Connections being opened at once. */
  concurrency: number
  /** Publisher ids in the data are 0 .. publishers-1. */
  publishers: number
  latency: boolean
  timeoutMs: number
}

export interface OpenResult { established: number; failed: number; ms: number; errorSamples: string[] }

export interface Snapshot {
  /** Messages received, summed over subscribers. */
  received: number
  /** Messages received by the subscriber that has the fewest, among those still open (0 when none is). */
  minReceived: number
  /** Streams open now (head received, not ended or closed). */
  open: number
  /** Streams ended or closed by the server or the network (never by us). */
  lost: number
  /** Order violations: a seq above the next expected one (gap or reordering), below it (duplicate or late), or not ours. */
  ahead: number
  behind: number
  foreign: number
  protocolErrors: number
  errorSamples: string[]
}

export interface SettleResult extends Snapshot {
  /** Subscribers that received exactly every acknowledged message, in order. */
  complete: number
  /** Acknowledged messages some subscriber never received (summed over subscribers). */
  missing: number
  /** Distinct orders of arrival across subscribers of the same channels (1 when all saw the same sequence). */
  orders: number
  ms: number
  /** Latency mode: publish-to-delivery times in µs, one per delivery. */
  latencies?: number[]
}

const REQUEST_TAIL = '\r\nAccept: text/event-stream\r\n\r\n'

let args: OpenArgs
let parsers: SseStreamParser[] = []
const sockets: Array<Socket<number> | undefined> = []
/** Next expected seq per subscriber × publisher. */
let expected = new Int32Array(0)
/** Rolling hash of the arrival order per subscriber. */
let orderHash = new Int32Array(0)
/** Group of each stream, and the lanes of each group. */
let groupOf = new Int32Array(0)
let groupLanes: number[][] = []
let lost = new Uint8Array(0)
let latencies = new Float64Array(0)
let latencyCount = 0
let readAt = 0
let ahead = 0
let behind = 0
let foreign = 0
let protocolErrors = 0
let established = 0
let failed = 0
let closing = false
const errorSamples: string[] = []
const sample = (msg: string) => { if (errorSamples.length < 8) errorSamples.push(msg) }

const sink: SseSink = {
  message(sub, publisher, seq, stamp) {
    if (seq < 0 || publisher >= args.publishers) { foreign++; return }
    const k = sub * args.publishers + publisher
    const next = expected[k]!
    if (next < 0) { foreign++; return } // a lane this stream did not subscribe to
    if (seq === next) expected[k] = next + 1
    else if (seq > next) { ahead++; expected[k] = seq + 1 } else behind++
    orderHash[sub] = (Math.imul(orderHash[sub]!, 31) + publisher * 1_000_003 + seq) | 0
    if (stamp > 0) {
      if (latencyCount === latencies.length) {
        const grown = new Float64Array(Math.max(1024, latencies.length * 2))
        grown.set(latencies)
        latencies = grown
      }
      latencies[latencyCount++] = readAt - stamp
    }
  },
}

function markLost(i: number, why: string): void {
  if (lost[i] || closing) return
  lost[i] = 1
  const p = parsers[i]!
  const err = p.lastError()
  sample(`subscriber ${i}: ${why}${err ? `; last error record: ${err}` : ''}`)
}

function open(a: OpenArgs): Promise<OpenResult> {
  args = a
  parsers = Array.from({ length: a.count }, (_, i) => new SseStreamParser(i, sink))
  expected = new Int32Array(a.count * a.publishers)
  orderHash = new Int32Array(a.count)
  lost = new Uint8Array(a.count)
  const groups = a.groups?.length ? a.groups : [{ path: a.path, lanes: Array.from({ length: a.publishers }, (_, p) => p) }]
  groupLanes = groups.map((g) => g.lanes)
  groupOf = Int32Array.from({ length: a.count }, (_, i) => ((a.first ?? 0) + i) % groups.length)
  if (a.groups?.length) {
    expected.fill(-1)
    for (let i = 0; i < a.count; i++) for (const p of groupLanes[groupOf[i]!]!) expected[i * a.publishers + p] = 0
  }
  const requests = groups.map((g) => Buffer.from(`GET ${g.path} HTTP/1.1\r\nHost: ${a.host}:${a.port}${REQUEST_TAIL}`))
  const t0 = performance.now()
  let next = 0
  let inFlight = 0

  return new Promise<OpenResult>((resolve) => {
    const finish = () => resolve({ established, failed, ms: performance.now() - t0, errorSamples: errorSamples.slice() })
    const timer = setTimeout(finish, a.timeoutMs)
    const settled = () => {
      inFlight--
      if (established + failed === a.count) { clearTimeout(timer); finish() } else launch()
    }
    const launch = () => {
      while (inFlight < a.concurrency && next < a.count) { inFlight++; connect(next++) }
    }
    const connect = (i: number) => {
      let headSeen = false
      const fail = (why: string) => {
        if (headSeen) return markLost(i, why)
        headSeen = true
        failed++
        sample(`subscriber ${i}: ${why}`)
        settled()
      }
      const source = a.sources.length ? a.sources[i % a.sources.length] : undefined
      Bun.connect<number>({
        hostname: a.host, port: a.port, data: i,
        // not in Bun's typings, but Bun 1.4 binds the socket to it before connecting
        ...(source ? { localAddress: source } : {}),
        socket: {
          open(s) { sockets[i] = s; s.write(requests[groupOf[i]!]!) },
          data(s, chunk) {
            const p = parsers[i]!
            if (a.latency) readAt = wallMicros()
            try { p.feed(chunk) } catch (e) {
              protocolErrors++
              fail(`protocol error: ${(e as Error).message}`)
              s.end()
              return
            }
            if (!headSeen && p.status !== 0) {
              if (p.status === 200) { headSeen = true; established++; settled() } else {
                fail(`answered ${p.headText.replace(/\r\n/g, ' | ').slice(0, 300)}`)
                s.end()
                return
              }
            }
            if (p.ended) { markLost(i, 'the server ended the stream'); s.end() }
          },
          end(s) { fail('the server closed the connection (FIN)'); s.end() },
          close(_s, err) { sockets[i] = undefined; fail(`connection closed${err ? `: ${err.message}` : ''}`) },
          connectError(_s, err) { fail(`connect${source ? ` from ${source}` : ''}: ${err.message}`) },
        },
      }).catch(() => { /* reported by connectError */ })
    }
    launch()
  })
}

function snapshot(): Snapshot {
  let received = 0
  let minReceived = Infinity
  let open = 0
  let lostCount = 0
  for (let i = 0; i < parsers.length; i++) {
    const p = parsers[i]!
    received += p.messages
    if (!lost[i] && p.status === 200 && sockets[i] && p.messages < minReceived) minReceived = p.messages
    if (lost[i]) lostCount++
    else if (p.status === 200 && sockets[i]) open++
  }
  return { received, minReceived: minReceived === Infinity ? 0 : minReceived, open, lost: lostCount, ahead, behind, foreign, protocolErrors, errorSamples: errorSamples.slice() }
}

/** Waits until every subscriber has every acknowledged message (or the timeout); then checks. */
async function settle({ acked, timeoutMs }: { acked: number[]; timeoutMs: number }): Promise<SettleResult> {
  const P = args.publishers
  const totals = groupLanes.map((lanes) => lanes.reduce((n, p) => n + (acked[p] ?? 0), 0))
  const t0 = performance.now()
  const count = () => {
    let complete = 0
    let missing = 0
    let waiting = 0
    for (let i = 0; i < parsers.length; i++) {
      const g = groupOf[i]!
      const total = totals[g]!
      let ok = parsers[i]!.messages === total
      for (const p of groupLanes[g]!) {
        const have = expected[i * P + p]!
        const want = acked[p] ?? 0
        if (have < want) { missing += want - have; ok = false } else if (have !== want) ok = false
      }
      if (ok) complete++
      else if (!lost[i] && parsers[i]!.messages < total) waiting++
    }
    return { complete, missing, waiting }
  }
  let c = count()
  while (c.waiting > 0 && performance.now() - t0 < timeoutMs) {
    await Bun.sleep(20)
    c = count()
  }
  const hashes = groupLanes.map(() => new Set<number>())
  for (let i = 0; i < parsers.length; i++) hashes[groupOf[i]!]!.add(orderHash[i]!)
  const orders = Math.max(...hashes.map((h) => h.size))
  return {
    ...snapshot(), complete: c.complete, missing: c.missing, orders, ms: performance.now() - t0,
    ...(args.latency ? { latencies: Array.from(latencies.subarray(0, latencyCount)) } : {}),
  }
}

/** Latency mode: forget the samples so far (the warm-up). */
function resetLatencies(): number {
  const n = latencyCount
  latencyCount = 0
  return n
}

/** Stops counting closes as losses; with `end` also closes every stream (else the server is expected to). */
function close({ end = true }: { end?: boolean } = {}): number {
  closing = true
  let n = 0
  if (end) for (const s of sockets) if (s) { s.end(); n++ }
  return n
}

serveAgent({ open, snapshot, settle, resetLatencies, close })
