/**
 * The publish comparison of issue 21: the gateway's JSON and msgpack publishes against same-run
 * baselines on the same machine, with wrk (one thread, one core) as the load generator, in
 * interleaved rounds (every target once per round, so a busy moment of the shared machine hits
 * one round of each rather than one target; forwards and backwards in turn). Ratios are taken
 * within a round and reported as median and range over the rounds. Baselines, all on one bare
 * Bun.serve process (bench/baseline-server.ts) receiving the very same request bytes as the
 * JSON publish:
 *   hello          answers "Hello, world!" without reading the body
 *   bare json()    `await req.json()`, answers 201
 *   bare text()    `JSON.parse(await req.text())`, answers 201
 *   bare bytes()   `await req.arrayBuffer()`, answers 201
 *   bare text() + head   the URL, Authorization and Content-Type read, then as bare text(): the
 *                  floor of a route that authenticates before it reads the body
 * Without wrk (or with --loadgen bun) the Bun generator drives the same runs, pipeline 1.
 */
import { pack } from 'msgpackr'
import type { LoadgenResult } from '../lib/loadgen-client'
import { runLoadgen } from '../lib/loadgen-client'
import type { Chart, Check, Measurement } from '../lib/scenario'
import type { Target } from '../lib/targets'
import { runWrk, wrkPath } from '../lib/wrk'

import { messageBody, PUBLISH_CHANNELS as CHANNELS, publishChannel as channel } from '../lib/publish-checks'

export async function withTarget<T extends { stop(): Promise<void> }, R>(
  start: Promise<T>,
  fn: (t: T) => Promise<R>,
): Promise<R> {
  const target = await start
  try {
    return await fn(target)
  } finally {
    await target.stop()
  }
}

/** The headers the official client sends with a publish (ably-js 2.28 on Node), in JSON or msgpack. */
export function clientHeaders(auth: string, format: 'json' | 'msgpack'): string[] {
  const type = format === 'json' ? 'application/json' : 'application/x-msgpack'
  return [
    `Authorization: ${auth}`,
    `Content-Type: ${type}`,
    `Accept: ${type}`,
    'X-Ably-Version: 6',
    'Ably-Agent: ably-js/2.28.0 bench',
  ]
}

export type Driver = 'wrk' | 'bun'
export const driverOf = (asked: string | undefined): Driver =>
  asked === 'bun' || (asked === undefined && !wrkPath()) ? 'bun' : 'wrk'

export interface LoadRequest {
  url: string
  headers: string[]
  body: string | Uint8Array
  /** Processes whose CPU is the server's, summed (the Bun generator reports the first one only). */
  serverPids: number[]
  label: string
}

export interface LoadShape {
  seconds: number
  warmup: number
  connections: number
  dir: string
}

/**
 * One measured run of `r` with wrk or the Bun generator (pipeline 1 either way); the Bun
 * generator counts every status other than `expect` as unexpected (wrk: every status from 400).
 */
export function drive(driver: Driver, r: LoadRequest, l: LoadShape, expect = 201): Promise<LoadgenResult> {
  if (driver === 'wrk') return runWrk({ ...r, ...l, variants: CHANNELS, method: 'POST' })
  return runLoadgen({
    ...l,
    url: r.url,
    variants: CHANNELS,
    method: 'POST',
    headers: r.headers,
    ...(typeof r.body === 'string' ? { body: r.body } : { bodyBase64: Buffer.from(r.body).toString('base64') }),
    pipeline: 1,
    expectStatus: expect,
    serverPid: r.serverPids[0],
    label: r.label,
  })
}

export interface CompareTarget {
  /** Short name used in ratios. */
  name: string
  /** What one request is (the results table). */
  request: string
  load: LoadRequest
  /** 2xx status every request must get (checked by the Bun generator; wrk only tells < 400). */
  expect: number
}

/** The five baselines on the bare server at `bare`, given the JSON publish's headers and body. */
export function baselineTargets(bare: Target, headers: string[], body: string): CompareTarget[] {
  const bytes = Buffer.byteLength(body)
  const one = (name: string, path: string, request: string, expect: number): CompareTarget => ({
    name,
    request,
    expect,
    load: { url: `${bare.base}${path}/${channel('{n}')}`, headers, body, serverPids: [bare.pid], label: name },
  })
  return [
    one('hello', '/hello', `POST, ${bytes} B body not read, 200 "Hello, world!"`, 200),
    one('bare json()', '/bare/json', `await req.json(), 201`, 201),
    one('bare text()', '/bare/text', `JSON.parse(await req.text()), 201`, 201),
    one('bare bytes()', '/bare/bytes', `await req.arrayBuffer(), 201`, 201),
    one('bare text() + head', '/bare/head', `req.url, 2 headers read, then as bare text()`, 201),
  ]
}

/** JSON and msgpack publishes of the same message to `gw` (its processes `pids`), with the official client's headers. */
export function publishTargets(gw: Target & { key: string }, suffix = '', pids = [gw.pid]): CompareTarget[] {
  const auth = `Basic ${Buffer.from(gw.key).toString('base64')}`
  const json = messageBody()
  const msgpack = new Uint8Array(pack(JSON.parse(json)))
  const url = `${gw.base}/channels/${channel('{n}')}/messages`
  return [
    {
      name: `gateway JSON${suffix}`,
      request: `POST /channels/bench-N/messages, ${Buffer.byteLength(json)} B JSON, Basic auth`,
      expect: 201,
      load: {
        url,
        headers: clientHeaders(auth, 'json'),
        body: json,
        serverPids: pids,
        label: `gateway JSON${suffix}`,
      },
    },
    {
      name: `gateway msgpack${suffix}`,
      request: `the same message as ${msgpack.length} B msgpack (the official client's default)`,
      expect: 201,
      load: {
        url,
        headers: clientHeaders(auth, 'msgpack'),
        body: msgpack,
        serverPids: pids,
        label: `gateway msgpack${suffix}`,
      },
    },
  ]
}

export interface Comparison {
  measurements: Measurement[]
  /** Requests per second of each target, one entry per round. */
  rps: Record<string, number[]>
  /**
   * Server CPU per request of each target (µs), one entry per round: steadier than the rates
   * when other work shares the machine, and what the gateway's own share is read from.
   */
  cpuUs: Record<string, number[]>
  checks: Check[]
  chart: Chart
}

/**
 * Runs every target once per round, `rounds` times: in order, then in reverse, and so on, so that
 * a drift of the machine's speed, or an effect of a run's place in its round, falls on every
 * target alike.
 */
export async function compare(
  driver: Driver,
  targets: CompareTarget[],
  rounds: number,
  l: LoadShape,
): Promise<Comparison> {
  const measurements: Measurement[] = []
  const rps: Record<string, number[]> = Object.fromEntries(targets.map((t) => [t.name, []]))
  const cpuUs: Record<string, number[]> = Object.fromEntries(targets.map((t) => [t.name, []]))
  const checks: Check[] = []
  for (let round = 1; round <= rounds; round++) {
    console.log(`round ${round} of ${rounds} (${driver}, ${l.connections} connections, ${l.seconds} s each) …`)
    for (const t of round % 2 ? targets : [...targets].reverse()) {
      const r = await drive(driver, { ...t.load, label: `${t.name}, round ${round}` }, l, t.expect)
      rps[t.name]!.push(r.rps)
      cpuUs[t.name]!.push(((r.serverCpuPercent ?? NaN) / 100 / r.rps) * 1e6)
      measurements.push({ target: `${t.name} (round ${round})`, request: t.request, load: r })
      const bad = r.unexpected + r.unanswered + r.connectionErrors + r.protocolErrors
      if (bad > 0 || r.responses === 0)
        checks.push({
          name: `${t.name}, round ${round}: every request answered ${t.expect}`,
          ok: false,
          detail: `statuses ${JSON.stringify(r.statuses)}, unanswered ${r.unanswered}, connection errors ${r.connectionErrors}`,
        })
    }
  }
  checks.push({
    name: `every comparison run answered as expected (${targets.length} targets × ${rounds} rounds)`,
    ok: checks.length === 0,
    detail: checks.length ? `${checks.length} runs failed (see above)` : 'no errors',
  })
  return {
    measurements,
    rps,
    cpuUs,
    checks,
    chart: {
      file: 'comparison.svg',
      title: `Requests per second, each target once per round (${driver}, ${l.connections} connections)`,
      kind: 'bar',
      yLabel: 'requests/s',
      categories: targets.map((t) => t.name),
      groups: Array.from({ length: rounds }, (_, i) => ({
        name: `round ${i + 1}`,
        values: targets.map((t) => rps[t.name]![i]!),
      })),
    },
  }
}

export interface RatioSpread {
  median: number
  min: number
  max: number
  perRound: number[]
}

export function median(values: number[]): number {
  const sorted = [...values].sort((x, y) => x - y)
  const mid = sorted.length >> 1
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
}

/** `a ÷ b` within each round, with median and range over the rounds. */
export function ratioOf(rps: Record<string, number[]>, a: string, b: string): RatioSpread {
  const perRound = rps[a]!.map((v, i) => v / rps[b]![i]!)
  return { median: median(perRound), min: Math.min(...perRound), max: Math.max(...perRound), perRound }
}

export const formatSpread = (r: RatioSpread) =>
  `${r.median.toFixed(2)} (${r.min.toFixed(2)}-${r.max.toFixed(2)}; rounds ${r.perRound.map((v) => v.toFixed(2)).join(', ')})`
