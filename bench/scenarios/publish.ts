/**
 * REST publish throughput (issue 21). First the comparison (publish-compare.ts): the gateway's JSON
 * and msgpack publishes against a bare hello world and bare body-reading routes, with wrk, in
 * interleaved rounds (`--rounds`, default 3), reported as ratios with their spread over the
 * rounds, and as server CPU per request. `--processes 1,2` adds the same publishes to 1 and to 2
 * gateway processes sharing one port on a Redis backend (a node each, CPU counted over all of them
 * and redis-server; see docs/performance.md).
 * Then, with --short, --redis or --rate-limits, the backend runs of publish-backends.ts (exact
 * accounting, history counted back, the Redis share and the rate limiter's cost).
 */
import type { Chart, Check, Headline, Measurement, RunOptions, ScenarioResult } from '../lib/scenario'
import { startDeployment } from '../lib/deployment'
import { startBaseline } from '../lib/targets'
import { startCluster } from '../lib/cluster'
import { backends, backendSeconds } from './publish-backends'
import {
  baselineTargets,
  clientHeaders,
  compare,
  driverOf,
  formatSpread,
  median,
  publishTargets,
  ratioOf,
  type CompareTarget,
} from './publish-compare'
import { messageBody, probe, SHORT_RING_SIZE } from '../lib/publish-checks'

/** What each part of the scenario contributes to the result. */
type Part = Pick<ScenarioResult, 'measurements' | 'checks' | 'ratios'> & {
  headlines: Headline[]
  notes: string[]
  chart: Chart
}

/** Targets of issue 21, in the wrk comparison. */
const HELLO_TARGET = 0.65
const MSGPACK_TARGET = 0.9
/** Issue 44: the embedded JSON publish's server CPU per publish at most this many times the bare `text()` route's. */
const CPU_TARGET = 1.5

export async function publishScenario(o: RunOptions): Promise<ScenarioResult> {
  const parts: Part[] = [await comparison(o)]
  if (o.short || o.redis || o.rateLimits) parts.push(await backends(o))
  const measurements: Measurement[] = parts.flatMap((p) => p.measurements)
  const checks: Check[] = parts.flatMap((p) => p.checks)
  const headlines: Headline[] = parts.flatMap((p) => p.headlines)
  const ratios: Record<string, number> = Object.assign({}, ...parts.map((p) => p.ratios))
  const notes: string[] = parts.flatMap((p) => p.notes)
  const charts: Chart[] = parts.map((p) => p.chart)
  if (o.short || o.redis || o.rateLimits)
    notes.push(
      'msgpack ÷ JSON differs between the two parts: the comparison alternates the formats in rounds with wrk ' +
        '(pipeline 1) and reports their ratio; the backend runs measure JSON, then msgpack, once each with the Bun ' +
        `generator (pipeline ${o.pipeline}), for their checks. Their rates are what the server got of a shared machine ` +
        '("bounded by"); their server µs/req is the comparable figure.',
    )
  notes.push(
    ...measurements
      .filter((m) => m.load.cpuPercent > 90)
      .map(
        (m) =>
          `load generator used ${m.load.cpuPercent.toFixed(0)}% of a core against ${m.target}: it may have been the bottleneck there`,
      ),
  )
  return {
    scenario: 'publish',
    description:
      'REST publish throughput of the gateway (JSON and msgpack) compared in the same run with a bare Bun.serve ' +
      'hello world and bare routes that read the body' +
      `${o.redis ? ', then against Redis (own redis-server, two gateway nodes, publishes to node A)' : ''}.`,
    load:
      `comparison: ${driverOf(o.loadgen)}, ${o.connections} keep-alive connections × 1 in flight, ` +
      `${compareRounds(o)} rounds of every target, ${compareSeconds(o)} s each` +
      (o.short || o.redis || o.rateLimits
        ? `; backends: Bun generator, ${o.connections} connections × pipeline ${o.pipeline}, JSON then msgpack, ` +
          `${o.warmup} s warm-up + ${backendSeconds(o)} s each`
        : ''),
    measurements,
    headlines,
    ratios,
    checks,
    notes,
    charts,
  }
}

const compareRounds = (o: RunOptions) => o.rounds ?? (o.short ? 1 : 3)
const compareSeconds = (o: RunOptions) => (o.short ? 1 : o.seconds)

/** The interleaved comparison: baselines, the gateway (memory), and with --processes a Redis cluster on one port. */
async function comparison(o: RunOptions) {
  const driver = driverOf(o.loadgen)
  const rounds = compareRounds(o)
  const shape = {
    seconds: compareSeconds(o),
    warmup: o.short ? 0 : Math.min(o.warmup, 1),
    connections: o.connections,
    dir: o.outDir,
  }
  const bare = await startBaseline(o.outDir)
  const env: Record<string, string> = o.short ? { RING_SIZE: String(SHORT_RING_SIZE) } : {}
  const stops: Array<() => Promise<void>> = [() => bare.stop()]
  try {
    const d = await startDeployment('memory', { logDir: o.outDir, env, cpuProfile: o.profile })
    stops.push(() => d.stop())
    const gw = d.publishTo
    const auth = `Basic ${Buffer.from(gw.key).toString('base64')}`
    const body = messageBody()
    await probe(gw.base, auth, body)
    const targets: CompareTarget[] = [
      ...baselineTargets(bare, clientHeaders(auth, 'json'), body),
      ...publishTargets(gw),
    ]
    for (const n of o.processes ?? []) {
      const cluster = await startCluster(n, { logDir: o.outDir, env, cpuProfile: o.profile, name: `cluster${n}` })
      stops.push(() => cluster.stop())
      await probe(cluster.base, auth, body)
      targets.push(...publishTargets(cluster, ` ×${n} (redis)`, [...cluster.pids, cluster.redis.pid]))
    }
    console.log(`comparison: ${targets.map((t) => t.name).join(', ')}`)
    const c = await compare(driver, targets, rounds, shape)
    const ratios: Record<string, number> = {}
    const notes: string[] = []
    const headlines: Headline[] = []
    const report = (a: string, b: string, target?: number) => {
      const r = ratioOf(c.rps, a, b)
      ratios[`${a} ÷ ${b} (median of ${rounds})`] = r.median
      notes.push(`${a} ÷ ${b}: ${formatSpread(r)}`)
      if (target !== undefined)
        headlines.push({
          name: `${a} ÷ ${b}`,
          value: r.median,
          unit: `(range ${r.min.toFixed(2)}-${r.max.toFixed(2)})`,
          target: `≥ ${target}`,
          met: r.median >= target,
        })
    }
    for (const base of ['hello', 'bare json()', 'bare text()', 'bare bytes()'])
      report('gateway JSON', base, base === 'hello' ? HELLO_TARGET : undefined)
    report('gateway msgpack', 'hello')
    report('gateway msgpack', 'gateway JSON', MSGPACK_TARGET)
    for (const n of o.processes ?? []) {
      report(`gateway JSON ×${n} (redis)`, 'hello', HELLO_TARGET)
      report(`gateway msgpack ×${n} (redis)`, 'gateway JSON ×' + n + ' (redis)')
      report(`gateway JSON ×${n} (redis)`, 'gateway JSON')
    }
    for (const t of targets) {
      const v = c.rps[t.name]!
      const us = c.cpuUs[t.name]!
      notes.push(
        `${t.name}: ${v.map((x) => Math.round(x).toLocaleString('en-US')).join(' / ')} req/s; ` +
          `server CPU per request ${us.map((x) => x.toFixed(1)).join(' / ')} µs (median ${median(us).toFixed(1)})`,
      )
    }
    // CPU per publish against the bare routes', within each round (issue 44's measure): against
    // bare text() with its target, and against the route that also reads the request's head
    for (const base of ['bare text()', 'bare text() + head']) {
      const r = ratioOf(c.cpuUs, 'gateway JSON', base)
      const name = `gateway JSON: server CPU per publish ÷ ${base}'s`
      ratios[`${name} (median of ${rounds})`] = r.median
      notes.push(`${name}: ${formatSpread(r)}`)
      headlines.push({
        name,
        value: r.median,
        unit: `(range ${r.min.toFixed(2)}-${r.max.toFixed(2)})`,
        ...(base === 'bare text()' ? { target: `≤ ${CPU_TARGET}`, met: r.median <= CPU_TARGET } : {}),
      })
    }
    // what the gateway adds to reading the body: its own share of a publish
    const own = median(c.cpuUs['gateway JSON']!) - median(c.cpuUs['bare text()']!)
    headlines.push({ name: "gateway's own CPU per JSON publish (beyond bare text())", value: own, unit: 'µs' })
    return { ...c, ratios, notes, headlines }
  } finally {
    for (const stop of stops.reverse()) await stop()
  }
}
