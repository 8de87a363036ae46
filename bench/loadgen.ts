/**
 * HTTP/1.1 load generator: many keep-alive `Bun.connect` sockets, hand-written requests sent
 * `--pipeline` deep, responses framed by ResponseParser. Runs `--warmup` s (not counted), then
 * `--seconds` s (counted), then stops sending and drains what is in flight. Prints one JSON line
 * (LoadgenResult) on stdout. `{n}` in --url and --body becomes `request index % --variants`;
 * --body-base64 sends bytes unchanged (e.g. msgpack).
 * With --server-pid it also reports that process's CPU over the counted window (--redis-pid: the same
 * for a redis-server behind it). Every second it
 * prints a progress line on stderr (prefixed with --label) and keeps responses/s as `timeline`.
 *
 *   bun bench/loadgen.ts --url http://127.0.0.1:8080/channels/c-{n}/messages --variants 100 \
 *     --method POST --header 'Authorization: Basic ...' --header 'Content-Type: application/json' \
 *     --body '{"name":"x","data":"y"}' --seconds 10 --connections 50 --pipeline 4
 */
import type { Socket } from 'bun'
import { loadavg } from 'node:os'
import { parseFlags } from './lib/args'
import { cpuSeconds } from './lib/cpu'
import { ResponseParser } from './lib/http-response-parser'

export interface LoadgenResult {
  /** Measured window length (s) and completed responses in it. */
  seconds: number
  responses: number
  rps: number
  /** Generator CPU over the measured window: user+system time as % of one core. */
  cpuPercent: number
  /** Same for the process of --server-pid (from /proc; absent when unavailable). */
  serverCpuPercent?: number
  /** Same for the process of --redis-pid. */
  redisCpuPercent?: number
  /** The machine's 1-minute load average when the window ended (runnable work of every process, others' too). */
  load1m?: number
  /** Whole run (warmup + window + drain): requests written, responses by status, unexpected ones. */
  sent: number
  received: number
  statuses: Record<string, number>
  unexpected: number
  /** Requests still unanswered at the end, sockets closed by the peer, framing errors. */
  unanswered: number
  connectionErrors: number
  protocolErrors: number
  errorSamples: string[]
  connections: number
  pipeline: number
  /** Responses per second, sampled every second from the start (warm-up included): [seconds, responses/s]. */
  timeline: Array<[number, number]>
}

const f = parseFlags(process.argv.slice(2), {
  url: 'string',
  method: 'string',
  header: 'strings',
  body: 'string',
  'body-base64': 'string',
  variants: 'number',
  seconds: 'number',
  warmup: 'number',
  connections: 'number',
  pipeline: 'number',
  expect: 'number',
  'drain-timeout': 'number',
  'server-pid': 'number',
  'redis-pid': 'number',
  label: 'string',
})
if (!f.url) throw new Error('--url is required')
const url = new URL(f.url.replaceAll('{n}', '__N__'))
const seconds = f.seconds ?? 10
const warmup = f.warmup ?? 1
const connections = Math.max(1, Math.floor(f.connections ?? 50))
const pipeline = Math.max(1, Math.floor(f.pipeline ?? 4))
const expect = f.expect ?? 200
const variants = Math.max(1, Math.floor(f.variants ?? 1))
const drainTimeoutMs = (f['drain-timeout'] ?? 5) * 1000

/**
 * All distinct requests, pre-encoded once, laid out as variants 0..V-1 followed by the first
 * `pipeline` again: any k <= pipeline consecutive requests are then one zero-copy subarray.
 */
const binaryBody = f['body-base64'] === undefined ? undefined : Buffer.from(f['body-base64'], 'base64')
const encoded: Buffer[] = Array.from({ length: variants }, (_, n) => {
  const path = `${url.pathname}${url.search}`.replaceAll('__N__', String(n))
  const body = binaryBody ?? (f.body === undefined ? undefined : Buffer.from(f.body.replaceAll('{n}', String(n))))
  const lines = [`${f.method ?? (body ? 'POST' : 'GET')} ${path} HTTP/1.1`, `Host: ${url.host}`, ...(f.header ?? [])]
  if (body !== undefined) lines.push(`Content-Length: ${body.length}`)
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`), body ?? Buffer.alloc(0)])
})
const ring = Array.from({ length: variants + pipeline }, (_, i) => encoded[i % variants]!)
const ringBytes = Buffer.concat(ring)
const offsets = [0]
for (const r of ring) offsets.push(offsets[offsets.length - 1]! + r.length)

interface Conn {
  parser: ResponseParser
  inflight: number
  pending: Uint8Array | null
}

const statusCounts = new Float64Array(600)
let seq = 0
let sent = 0
let received = 0
let connectionErrors = 0
let protocolErrors = 0
let lost = 0
let sending = true
const errorSamples: string[] = []
const sockets = new Set<Socket<Conn>>()
const sample = (msg: string) => {
  if (errorSamples.length < 5) errorSamples.push(msg)
}
const countStatus = (status: number) => {
  statusCounts[status]!++
  received++
}

/** Writes the next `k` (<= pipeline) requests in one go. */
function send(s: Socket<Conn>, c: Conn, k: number): void {
  const j = seq % variants
  seq += k
  c.inflight += k
  sent += k
  const bytes = ringBytes.subarray(offsets[j]!, offsets[j + k]!)
  if (c.pending) c.pending = Buffer.concat([c.pending, bytes])
  else flushOut(s, c, bytes)
}

/** Bun's write does not buffer what the kernel refused: keep the rest until `drain`. */
function flushOut(s: Socket<Conn>, c: Conn, buf: Uint8Array): void {
  const n = s.write(buf)
  c.pending = n >= buf.length ? null : buf.subarray(Math.max(n, 0))
}

function connect(): void {
  const c: Conn = { parser: new ResponseParser(countStatus), inflight: 0, pending: null }
  Bun.connect<Conn>({
    hostname: url.hostname,
    port: Number(url.port || 80),
    data: c,
    socket: {
      open(s) {
        sockets.add(s)
        s.setNoDelay(true)
        if (sending) send(s, c, pipeline)
      },
      data(s, chunk) {
        let done: number
        try {
          done = c.parser.feed(chunk)
        } catch (e) {
          protocolErrors++
          sample(`protocol: ${(e as Error).message}`)
          s.end()
          return
        }
        c.inflight -= done
        if (sending) for (let left = done; left > 0; left -= pipeline) send(s, c, Math.min(left, pipeline))
      },
      drain(s) {
        if (c.pending) flushOut(s, c, c.pending)
      },
      close(s, err) {
        sockets.delete(s)
        if (!sending && c.inflight === 0) return
        connectionErrors++
        lost += c.inflight
        sample(`connection closed with ${c.inflight} in flight${err ? `: ${err.message}` : ''}`)
        c.inflight = 0
        if (sending) setTimeout(connect, 50)
      },
      connectError(_s, err) {
        connectionErrors++
        sample(`connect: ${err.message}`)
        if (sending) setTimeout(connect, 200)
      },
    },
  }).catch(() => {
    /* reported by connectError */
  })
}

const inflight = () => {
  let n = 0
  for (const s of sockets) n += s.data.inflight
  return n
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

const timeline: Array<[number, number]> = []
const tStart = performance.now()
let lastSample = { t: tStart, received: 0 }
const sampler = setInterval(() => {
  const t = performance.now()
  const rate = ((received - lastSample.received) * 1000) / (t - lastSample.t)
  lastSample = { t, received }
  const x = Math.round((t - tStart) / 100) / 10
  timeline.push([x, rate])
  process.stderr.write(
    `  [${f.label ?? 'loadgen'}] ${x.toFixed(0).padStart(3)} s: ${Math.round(rate).toLocaleString('en-US')} responses/s\n`,
  )
}, 1000)

for (let i = 0; i < connections; i++) connect()
await sleep(warmup * 1000)
const startReceived = received
const serverPid = f['server-pid']
const serverCpu0 = serverPid ? cpuSeconds(serverPid) : undefined
const redisPid = f['redis-pid']
const redisCpu0 = redisPid ? cpuSeconds(redisPid) : undefined
const startCpu = process.cpuUsage()
const t0 = performance.now()
await sleep(seconds * 1000)
const responses = received - startReceived
const elapsed = (performance.now() - t0) / 1000
const cpu = process.cpuUsage(startCpu)
const serverCpu1 = serverPid ? cpuSeconds(serverPid) : undefined
const redisCpu1 = redisPid ? cpuSeconds(redisPid) : undefined
sending = false
clearInterval(sampler)
const drainUntil = performance.now() + drainTimeoutMs
while (inflight() > 0 && performance.now() < drainUntil) await sleep(10)
const unanswered = inflight() + lost
for (const s of sockets) s.end()

const statuses: Record<string, number> = {}
statusCounts.forEach((n, code) => {
  if (n) statuses[code] = n
})
const result: LoadgenResult = {
  seconds: elapsed,
  responses,
  rps: responses / elapsed,
  cpuPercent: ((cpu.user + cpu.system) / 1e6 / elapsed) * 100,
  load1m: loadavg()[0],
  serverCpuPercent:
    serverCpu0 !== undefined && serverCpu1 !== undefined ? ((serverCpu1 - serverCpu0) / elapsed) * 100 : undefined,
  redisCpuPercent:
    redisCpu0 !== undefined && redisCpu1 !== undefined ? ((redisCpu1 - redisCpu0) / elapsed) * 100 : undefined,
  sent,
  received,
  statuses,
  unexpected: received - (statusCounts[expect] ?? 0),
  unanswered,
  connectionErrors,
  protocolErrors,
  errorSamples,
  connections,
  pipeline,
  timeline,
}
process.stdout.write(`${JSON.stringify(result)}\n`)
process.exit(0)
