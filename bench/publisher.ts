/**
 * Sequence publisher of the fanout and latency scenarios (an agent, see lib/agent.ts): P
 * keep-alive `Bun.connect` connections POST `{"name":"bench","data":"<p>.<seq>[.<stamp>]:<pad>"}`
 * (sequence-payload.ts) to one channel, each numbering its own publishes from 0. Either as fast as
 * the acknowledgements allow (`rate` 0: each connection keeps `pipeline` publishes in flight) or
 * at a fixed total rate, spread over the connections that have room. Responses are framed by
 * ResponseParser; only 201 counts as published. Driven by lib/publisher-client.ts.
 */
import type { Socket } from 'bun'
import { serveAgent } from './lib/agent'
import { ResponseParser } from './lib/http-response-parser'
import { paddingFor, sequenceData, wallMicros } from './lib/sequence-payload'

export interface PublishArgs {
  host: string
  port: number
  channel: string
  /** Authorization header value. */
  auth: string
  connections: number
  pipeline: number
  /** Publishes per second over all connections; 0 = as fast as acknowledgements come back. */
  rate: number
  /** Carry the send time (µs) in the data, for latency. */
  stamps: boolean
  /** Approximate JSON body size. */
  bytes: number
}

export interface PublishCounts { sent: number; published: number }

export interface PublishResult extends PublishCounts {
  /** Acknowledged (201) publishes per publisher id = the seqs every subscriber must receive. */
  acked: number[]
  statuses: Record<string, number>
  unanswered: number
  connectionErrors: number
  protocolErrors: number
  errorSamples: string[]
  /** Rate mode: the furthest a publish fell behind its schedule (ms), e.g. for lack of a free connection. */
  maxLagMs: number
}

interface Conn { p: number; seq: number; inflight: number; parser: ResponseParser; socket?: Socket<Conn>; pending: Buffer | null }

let a: PublishArgs
let prefix = ''
let padding = ''
let conns: Conn[] = []
let sending = false
let acked: number[] = []
let sent = 0
let published = 0
let connectionErrors = 0
let protocolErrors = 0
let maxLagMs = 0
let ticker: ReturnType<typeof setInterval> | undefined
const statuses: Record<string, number> = {}
const errorSamples: string[] = []
const sample = (msg: string) => { if (errorSamples.length < 5) errorSamples.push(msg) }

function publish(c: Conn): void {
  const s = c.socket!
  const data = sequenceData(c.p, c.seq++, a.stamps ? wallMicros() : undefined, padding)
  const body = `{"name":"bench","data":"${data}"}`
  const bytes = Buffer.from(`${prefix}${Buffer.byteLength(body)}\r\n\r\n${body}`)
  c.inflight++
  sent++
  if (c.pending) { c.pending = Buffer.concat([c.pending, bytes]); return }
  const n = s.write(bytes)
  c.pending = n >= bytes.length ? null : bytes.subarray(Math.max(0, n))
}

function onResponse(c: Conn, status: number): void {
  c.inflight--
  statuses[status] = (statuses[status] ?? 0) + 1
  if (status === 201) { acked[c.p]!++; published++ }
  if (sending && a.rate === 0) publish(c)
}

function connect(p: number): Promise<void> {
  const c: Conn = { p, seq: 0, inflight: 0, pending: null, parser: new ResponseParser((status) => onResponse(c, status)) }
  conns[p] = c
  return new Promise<void>((resolve, reject) => {
    Bun.connect<Conn>({
      hostname: a.host, port: a.port, data: c,
      socket: {
        open(s) {
          c.socket = s
          s.setNoDelay(true)
          resolve()
        },
        data(s, chunk) {
          try { c.parser.feed(chunk) } catch (e) {
            protocolErrors++
            sample(`publisher ${p}: ${(e as Error).message}`)
            s.end()
          }
        },
        drain(s) {
          if (!c.pending) return
          const n = s.write(c.pending)
          c.pending = n >= c.pending.length ? null : c.pending.subarray(Math.max(0, n))
        },
        close(_s, err) {
          c.socket = undefined
          if (!sending && c.inflight === 0) return
          connectionErrors++
          sample(`publisher ${p}: connection closed with ${c.inflight} in flight${err ? `: ${err.message}` : ''}`)
        },
        connectError(_s, err) { reject(new Error(`publisher ${p}: connect: ${err.message}`)) },
      },
    }).catch(reject)
  })
}

/** Fixed rate: every millisecond, sends what the schedule says is due on connections with room. */
function startTicker(): void {
  const t0 = performance.now()
  let issued = 0
  let cursor = 0
  ticker = setInterval(() => {
    const now = performance.now()
    const due = Math.floor(((now - t0) * a.rate) / 1000)
    while (issued < due) {
      let c: Conn | undefined
      for (let k = 0; k < conns.length && !c; k++) {
        const cand = conns[(cursor + k) % conns.length]!
        if (cand.socket && cand.inflight < a.pipeline) { c = cand; cursor = (cursor + k + 1) % conns.length }
      }
      if (!c) break // every connection is busy: the backlog shows up as lag
      maxLagMs = Math.max(maxLagMs, now - t0 - (issued * 1000) / a.rate)
      publish(c)
      issued++
    }
  }, 1)
}

async function start(args: PublishArgs): Promise<{ connections: number }> {
  a = args
  prefix = `POST /channels/${encodeURIComponent(a.channel)}/messages HTTP/1.1\r\nHost: ${a.host}:${a.port}\r\n` +
    `Authorization: ${a.auth}\r\nContent-Type: application/json\r\nContent-Length: `
  padding = paddingFor(a.bytes)
  acked = Array.from({ length: a.connections }, () => 0)
  conns = []
  await Promise.all(Array.from({ length: a.connections }, (_, p) => connect(p)))
  sending = true
  if (a.rate > 0) startTicker()
  else for (const c of conns) for (let k = 0; k < a.pipeline; k++) publish(c)
  return { connections: conns.length }
}

const counts = (): PublishCounts => ({ sent, published })

async function stop({ drainMs }: { drainMs: number }): Promise<PublishResult> {
  sending = false
  if (ticker) clearInterval(ticker)
  const inflight = () => conns.reduce((n, c) => n + (c.socket ? c.inflight : 0), 0)
  const until = performance.now() + drainMs
  while (inflight() > 0 && performance.now() < until) await Bun.sleep(5)
  const unanswered = conns.reduce((n, c) => n + c.inflight, 0)
  for (const c of conns) c.socket?.end()
  return { sent, published, acked, statuses, unanswered, connectionErrors, protocolErrors, errorSamples, maxLagMs }
}

serveAgent({ start, counts, stop })
