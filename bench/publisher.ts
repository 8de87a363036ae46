/**
 * Sequence publisher of the delivery scenarios (an agent, see lib/agent.ts). Publishing is
 * organised in lanes: lane k publishes to `lanes[k].channel` with `lanes[k].key` and numbers its
 * messages from 0 (`{"name":"bench","data":"<k>.<seq>[.<stamp>]:<pad>"}`, sequence-payload.ts),
 * `batch` messages per publish. Over HTTP a publish is a POST (a JSON array when batch > 1); over
 * the realtime protocol it is one MESSAGE protocol message answered by ACK/NACK
 * (lib/publish-connections.ts). A lane has at most one publish in flight, so the order of its
 * messages is defined; a publish that is not acknowledged (e.g. refused: 429, NACK 42910) gives
 * its numbers back, so the lane's admitted messages stay gap-free. Lane k uses connection
 * k % connections, which keeps up to `pipeline` publishes (of different lanes) in flight; the
 * lanes of one connection share a key.
 *
 * Either as fast as the acknowledgements allow (`rate` 0) or paced: each lane publishes `rate`
 * messages per second on its own schedule (lanes staggered over one period). As fast as allowed
 * may be bounded by an allowance of messages the parent raises as subscribers receive (`allow`:
 * flow control, when nothing in the gateway holds publishers back). Records every publish's
 * latency (write to answer). Driven by lib/publisher-client.ts.
 */
import { serveAgent } from './lib/agent'
import { distribution, type Distribution } from './lib/percentiles'
import {
  openPublishConnection,
  type Outcome,
  type PublishConnection,
  type PublishTransport,
} from './lib/publish-connections'
import { paddingFor, sequenceData, wallMicros } from './lib/sequence-payload'

export interface Lane {
  channel: string
  /** API key `appId.keyId:secret` (HTTP: Basic auth; realtime: the connection's key). */
  key: string
}

export interface PublishArgs {
  transport: PublishTransport
  host: string
  port: number
  lanes: Lane[]
  connections: number
  /** Publishes in flight per connection (each lane has at most one). */
  pipeline: number
  /** Messages per second per lane; 0 = as fast as acknowledgements come back. */
  rate: number
  /** Messages per publish. */
  batch: number
  /** Carry the send time (µs) in the data, for latency. */
  stamps: boolean
  /** Approximate JSON size of one message. */
  bytes: number
  /** Rate 0: messages that may be written before the first `allow` (default unbounded). */
  allowance?: number
  /**
   * Paced: the furthest (ms) a lane catches up on its schedule after a stall; slots further back
   * are skipped (and counted), so a stall is never followed by a burst beyond this many ms of the
   * rate (default unbounded: every missed slot is sent as soon as the answers allow).
   */
  maxCatchUpMs?: number
}

export interface PublishCounts {
  /** Publishes written, publishes acknowledged (201, ACK), messages in them, publishes refused (429, NACK 42910). */
  sent: number
  published: number
  messages: number
  refused: number
}

export interface PublishResult extends PublishCounts {
  /** Admitted messages per lane = the seqs every subscriber of the lane must receive. */
  acked: number[]
  /** Messages refused by the rate limits, per lane. */
  refusedByLane: number[]
  /** Per lane: ms (performance.now of the publisher) of its first and last publish. */
  firstSentMs: number[]
  lastSentMs: number[]
  statuses: Record<string, number>
  unanswered: number
  connectionErrors: number
  protocolErrors: number
  errorSamples: string[]
  /** Rate mode: the furthest a publish fell behind its schedule (ms). */
  maxLagMs: number
  /** Rate mode: messages of slots skipped because their lane was more than `maxCatchUpMs` behind. */
  skipped: number
  /** Write-to-answer time of every publish since the last reset, µs. */
  latencyUs: Distribution
}

interface LaneState {
  k: number
  channel: string
  conn: Conn
  seq: number
  busy: boolean
  /** Rate mode: publishes issued, and the ms of the first one's due time. */
  issued: number
  phaseMs: number
  acked: number
  refused: number
  first: number
  last: number
}

interface Conn {
  i: number
  lanes: LaneState[]
  cursor: number
  c: PublishConnection
}

let a: PublishArgs
let padding = ''
let conns: Conn[] = []
let lanes: LaneState[] = []
let sending = false
let sent = 0
let published = 0
let messages = 0
let refused = 0
let connectionErrors = 0
let protocolErrors = 0
let maxLagMs = 0
let skipped = 0
/** Messages written, and how many may be (flow control). */
let written = 0
let allowance = Infinity
let t0 = 0
let periodMs = 0
let latencies = new Float64Array(1 << 16)
let latencyCount = 0
let ticker: ReturnType<typeof setInterval> | undefined
const statuses: Record<string, number> = {}
const errorSamples: string[] = []
const sample = (msg: string) => {
  if (errorSamples.length < 5) errorSamples.push(msg)
}

function publish(l: LaneState): void {
  const stamp = a.stamps ? wallMicros() : undefined
  const data: string[] = []
  for (let i = 0; i < a.batch; i++) data.push(sequenceData(l.k, l.seq++, stamp, padding))
  const now = performance.now()
  if (!l.first) l.first = now
  l.last = now
  l.busy = true
  sent++
  written += a.batch
  l.conn.c.send(l.channel, data, (o) => onAnswer(l, now, o))
}

function onAnswer(l: LaneState, at: number, o: Outcome): void {
  const now = performance.now()
  if (latencyCount === latencies.length) {
    const grown = new Float64Array(latencies.length * 2)
    grown.set(latencies)
    latencies = grown
  }
  latencies[latencyCount++] = (now - at) * 1000
  statuses[o.status] = (statuses[o.status] ?? 0) + 1
  l.busy = false
  if (o.ok) {
    l.acked += a.batch
    published++
    messages += a.batch
  } else {
    l.seq -= a.batch // not appended: the lane's next publish reuses these numbers
    if (o.refused) {
      refused++
      l.refused += a.batch
    }
  }
  if (!sending) return
  if (a.rate === 0) fill(l.conn)
  else pump(l, now)
}

/** As fast as acknowledgements allow: keep `pipeline` publishes of free lanes in flight. */
function fill(c: Conn): void {
  if (!c.c.open) return
  const n = c.lanes.length
  for (let k = 0; k < n && c.c.inFlight < a.pipeline && written + a.batch <= allowance; k++) {
    const l = c.lanes[(c.cursor + k) % n]!
    if (l.busy) continue
    publish(l)
    c.cursor = (c.cursor + k + 1) % n
    k = -1 // rescan from the new cursor
  }
}

/** Paced: publishes lane `l`'s next message if it is due and the lane and its connection have room. */
function pump(l: LaneState, now: number): void {
  if (l.busy || !l.conn.c.open || l.conn.c.inFlight >= a.pipeline) return
  const due = t0 + l.phaseMs + l.issued * periodMs
  if (now < due) return
  maxLagMs = Math.max(maxLagMs, now - due)
  const catchUp = a.maxCatchUpMs ?? Infinity
  if (now - due > catchUp) {
    const skip = Math.floor((now - due - catchUp) / periodMs)
    l.issued += skip
    skipped += skip * a.batch
  }
  l.issued++
  publish(l)
}

const hooks = (i: number) => ({
  connectionError(why: string, inFlight: number) {
    if (!sending && inFlight === 0) return
    connectionErrors++
    sample(`connection ${i}: ${why} with ${inFlight} in flight`)
  },
  protocolError(why: string) {
    protocolErrors++
    sample(`connection ${i}: ${why}`)
  },
})

async function start(args: PublishArgs): Promise<{ connections: number; lanes: number }> {
  a = { ...args, batch: Math.max(1, Math.floor(args.batch)) }
  allowance = args.allowance ?? Infinity
  padding = paddingFor(a.bytes)
  const n = Math.min(a.connections, a.lanes.length)
  conns = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const key = a.lanes[i]!.key
      if (a.lanes.some((l, k) => k % n === i && l.key !== key))
        throw new Error(`the lanes of connection ${i} (every ${n}th) must share one key`)
      const c = await openPublishConnection(a.transport, { host: a.host, port: a.port, key }, hooks(i))
      return { i, lanes: [], cursor: 0, c } satisfies Conn
    }),
  )
  periodMs = a.rate > 0 ? (a.batch * 1000) / a.rate : 0
  lanes = a.lanes.map((lane, k) => {
    const conn = conns[k % conns.length]!
    const l: LaneState = {
      k,
      channel: lane.channel,
      conn,
      seq: 0,
      busy: false,
      issued: 0,
      phaseMs: (periodMs * k) / a.lanes.length,
      acked: 0,
      refused: 0,
      first: 0,
      last: 0,
    }
    conn.lanes.push(l)
    return l
  })
  sending = true
  t0 = performance.now()
  if (a.rate > 0) {
    ticker = setInterval(() => {
      const now = performance.now()
      for (const l of lanes) pump(l, now)
    }, 1)
  } else for (const c of conns) fill(c)
  return { connections: conns.length, lanes: lanes.length }
}

const counts = (): PublishCounts => ({ sent, published, messages, refused })

/** Flow control: up to `messages` messages may have been written in all; publishing resumes at once. */
function allow({ messages: n }: { messages: number }): number {
  const before = written
  allowance = n
  if (sending && a.rate === 0) for (const c of conns) fill(c)
  return before
}

/** Forgets the publish latencies recorded so far (the warm-up). */
function reset(): number {
  const n = latencyCount
  latencyCount = 0
  return n
}

async function stop({ drainMs }: { drainMs: number }): Promise<PublishResult> {
  sending = false
  if (ticker) clearInterval(ticker)
  const inflight = () => conns.reduce((n, c) => n + (c.c.open ? c.c.inFlight : 0), 0)
  const until = performance.now() + drainMs
  while (inflight() > 0 && performance.now() < until) await Bun.sleep(5)
  const unanswered = conns.reduce((n, c) => n + c.c.inFlight, 0)
  for (const c of conns) c.c.end()
  return {
    sent,
    published,
    messages,
    refused,
    statuses,
    unanswered,
    connectionErrors,
    protocolErrors,
    errorSamples,
    maxLagMs,
    skipped,
    acked: lanes.map((l) => l.acked),
    refusedByLane: lanes.map((l) => l.refused),
    firstSentMs: lanes.map((l) => l.first),
    lastSentMs: lanes.map((l) => l.last),
    latencyUs: distribution(latencies.subarray(0, latencyCount)),
  }
}

serveAgent({ start, counts, allow, reset, stop })
