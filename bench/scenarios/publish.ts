/**
 * REST publish throughput: the bare Bun.serve hello world first (the ceiling on this machine),
 * then a bare route that only reads the same JSON body and answers 201 (the most any JSON publish
 * route reaches in Bun), then `POST /channels/bench-<i % 100>/messages` against the gateway with a
 * 100-byte JSON message and Basic auth. With --redis the same load follows against a Redis
 * cluster (private redis-server, two gateway nodes; publishes go to node A), after the memory run
 * with the same parameters (pipeline 1: Bun closes a connection that pipelines behind a pending
 * async response). Every publish must be answered 201; in short mode the published messages are
 * also counted back from channel history (on node B in the Redis run: the history is shared).
 * With --rate-limits each backend is measured again with RATE_LIMITS=on (a limit far above the
 * load, so every publish is charged and none refused): what the limiter costs a publish.
 */
import { cpuSeconds } from '../lib/cpu'
import { startDeployment, type Backend, type Deployment } from '../lib/deployment'
import { runLoadgen, type LoadSpec } from '../lib/loadgen-client'
import type { Chart, Check, Headline, Measurement, RunOptions, ScenarioResult } from '../lib/scenario'
import { startBaseline, type Target } from '../lib/targets'

/** Target of the issue: Redis publish throughput at least this share of the memory one. */
const REDIS_TARGET_SHARE = 0.4

const CHANNELS = 100
/** 100 × 20,000 messages would need > 500k publishes/s over a short run. */
const SHORT_RING_SIZE = 20_000
const channel = (n: number | string) => `bench-${n}`

/** `{"name":"bench","data":"xxx…"}`, exactly `bytes` long. */
export function messageBody(bytes = 100): string {
  const empty = JSON.stringify({ name: 'bench', data: '' })
  return JSON.stringify({ name: 'bench', data: 'x'.repeat(Math.max(0, bytes - empty.length)) })
}

async function withTarget<T extends { stop(): Promise<void> }, R>(start: Promise<T>, fn: (t: T) => Promise<R>): Promise<R> {
  const target = await start
  try { return await fn(target) } finally { await target.stop() }
}

export async function publishScenario(o: RunOptions): Promise<ScenarioResult> {
  const load = { seconds: o.seconds, warmup: o.warmup, connections: o.connections, pipeline: o.pipeline }
  const measurements: Measurement[] = []
  const checks: Check[] = []
  const body = messageBody()

  console.log(`baseline: Bun.serve hello world, then a bare body-reading POST route, ${o.warmup} s warm-up + ${o.seconds} s each …`)
  const [baseline, barePost] = await withTarget(startBaseline(o.outDir), async (t: Target) => [
    await runLoadgen({ ...load, url: `${t.base}/`, serverPid: t.pid, label: 'baseline' }),
    await runLoadgen({
      ...load, url: `${t.base}/channels/${channel('{n}')}/messages`, variants: CHANNELS, method: 'POST', body, expectStatus: 201,
      headers: ['Authorization: Basic unused', 'Content-Type: application/json'], serverPid: t.pid, label: 'bare POST',
    }),
  ] as const)
  measurements.push({ target: 'baseline', request: 'GET / (hello world)', load: baseline })
  measurements.push({ target: 'bare POST route', request: `POST /channels/bench-N/messages (${Buffer.byteLength(body)} B JSON read, 201; no auth, no storage)`, load: barePost })
  checks.push(noErrors('baseline answered every request 200', baseline))
  checks.push(noErrors('bare POST route answered every request 201', barePost))

  const rps: Partial<Record<Backend, number>> = {}
  const notes: string[] = []
  const limitedRps: Partial<Record<Backend, number>> = {}
  const runs = (['memory', 'redis'] as const).filter((b) => b === 'memory' || o.redis)
    .flatMap((backend) => (o.rateLimits ? [false, true] : [false]).map((limited) => ({ backend, limited })))
  for (const { backend, limited } of runs) {
    const label = `${backend === 'memory' ? 'gateway' : 'gateway (redis, node A)'}${limited ? ' + rate limits' : ''}`
    console.log(`${label}: publish to ${CHANNELS} channels, ${o.warmup} s warm-up + ${o.seconds} s …`)
    // short mode counts every message back from history, so the per-channel ring must hold them all;
    // with rate limits on, every publish is charged to the account's bucket under a limit far above
    // the load (history too: short mode reads every channel back)
    const unlimited = '1000000000'
    const env = {
      ...(o.short ? { RING_SIZE: String(SHORT_RING_SIZE) } : {}),
      ...(limited ? { RATE_LIMITS: 'on', LIMIT_MESSAGES_PER_SECOND: unlimited, LIMIT_HISTORY_PER_SECOND: unlimited } : {}),
    }
    let stored: Check | undefined
    const publish = await withTarget(startDeployment(backend, { logDir: o.outDir, env, name: `gateway-${backend}${limited ? '-limited' : ''}`, cpuProfile: o.profile }), async (d) => {
      const t = d.publishTo
      const auth = `Basic ${Buffer.from(t.key).toString('base64')}`
      await probe(t.base, auth, body)
      const spec: LoadSpec = {
        ...load, url: `${t.base}/channels/${channel('{n}')}/messages`, variants: CHANNELS, method: 'POST', body, expectStatus: 201,
        headers: [`Authorization: ${auth}`, 'Content-Type: application/json'], serverPid: t.pid, label: label,
      }
      const cpu = cpuMeter(d)
      const r = await runLoadgen(spec)
      if (backend === 'redis') {
        notes.push(`redis run, CPU over the whole load (warm-up included), % of one core: ${cpu()}; ` +
          `${o.connections} connections × ${o.pipeline} in flight at ${Math.round(r.rps).toLocaleString('en-US')}/s = ${((o.connections * o.pipeline * 1000) / r.rps).toFixed(2)} ms per publish; ` +
          `node A's mean Redis command time ${await meanRedisMs(t.base)}`)
      }
      if (o.short) stored = await historyCheck(d.subscribeTo.base, auth, r.statuses['201'] ?? 0, backend === 'redis' ? ' (read on node B)' : '')
      return r
    })
    if (limited) limitedRps[backend] = publish.rps
    else rps[backend] = publish.rps
    measurements.push({ target: label, request: `POST /channels/bench-N/messages (${Buffer.byteLength(body)} B JSON)`, load: publish })
    checks.push(noErrors(`${label}: every publish answered 201`, publish))
    checks.push({
      name: `${label}: publishes acknowledged`, ok: (publish.statuses['201'] ?? 0) > 0 && publish.statuses['201'] === publish.sent,
      detail: `${publish.statuses['201'] ?? 0} of ${publish.sent} publishes answered 201`,
    })
    if (stored) checks.push(stored)
  }

  notes.push(...measurements.filter((m) => m.load.cpuPercent > 90)
    .map((m) => `load generator used ${m.load.cpuPercent.toFixed(0)}% of a core against ${m.target}: it may have been the bottleneck there`))
  // the second ratio separates what any body-reading route costs in Bun from what the gateway adds
  const ratios: Record<string, number> = { 'publish/s ÷ baseline req/s': rps.memory! / baseline.rps, 'publish/s ÷ bare POST route req/s': rps.memory! / barePost.rps }
  const headlines: Headline[] = [{ name: 'publish/s (memory)', value: rps.memory!, unit: '/s' }]
  if (rps.redis !== undefined) {
    const share = rps.redis / rps.memory!
    ratios['redis publish/s ÷ memory publish/s'] = share
    headlines.push({ name: 'publish/s (redis, 2 nodes)', value: rps.redis, unit: '/s' })
    headlines.push({ name: 'redis ÷ memory publish rate', value: share * 100, unit: '%', target: `≥ ${REDIS_TARGET_SHARE * 100}%`, met: share >= REDIS_TARGET_SHARE })
  }
  for (const backend of ['memory', 'redis'] as const) {
    const on = limitedRps[backend]
    const off = rps[backend]
    if (on === undefined || off === undefined) continue
    ratios[`${backend}: publish/s with rate limits ÷ without`] = on / off
    // the gateway is saturated in both runs, so 1/rate is its time per publish: the difference is the limiter's
    headlines.push({ name: `rate-limit cost per publish (${backend})`, value: (1 / on - 1 / off) * 1e6, unit: 'µs of gateway time' })
  }
  const charts: Chart[] = [{
    file: 'throughput.svg', title: 'Responses per second over each run (warm-up included)', kind: 'line', xLabel: 'seconds', yLabel: 'responses/s',
    series: measurements.map((m) => ({ name: m.target, points: m.load.timeline })),
  }]
  return {
    scenario: 'publish',
    description: 'REST publish throughput of the gateway compared with a bare Bun.serve hello world on the same machine' +
      `${o.redis ? ', then against Redis (own redis-server, two gateway nodes, publishes to node A), same parameters' : ''}.`,
    measurements,
    headlines,
    ratios,
    checks,
    notes,
    charts,
  }
}

/** Mean of the gateway's gateway_redis_command_seconds histogram (its /metrics), in ms. */
async function meanRedisMs(base: string): Promise<string> {
  try {
    const text = await (await fetch(`${base}/metrics`)).text()
    const sum = Number(/^gateway_redis_command_seconds_sum(?:\{\})? (\S+)$/m.exec(text)?.[1])
    const count = Number(/^gateway_redis_command_seconds_count(?:\{\})? (\S+)$/m.exec(text)?.[1])
    return count > 0 ? `${((sum / count) * 1000).toFixed(3)} ms over ${count.toLocaleString('en-US')} commands` : 'n/a'
  } catch (e) {
    return `n/a (${(e as Error).message})`
  }
}

/** CPU of every process of a deployment from now until the returned function is called. */
function cpuMeter(d: Deployment): () => string {
  const procs = [...d.nodes.map((n, i) => [`node ${'AB'[i] ?? i}`, n.pid] as const), ...(d.redis ? [['redis-server', d.redis.pid] as const] : [])]
  const t0 = performance.now()
  const c0 = procs.map(([, pid]) => cpuSeconds(pid) ?? 0)
  return () => {
    const dt = (performance.now() - t0) / 1000
    return procs.map(([name, pid], i) => `${name} ${Math.round((((cpuSeconds(pid) ?? 0) - c0[i]!) / dt) * 100)}%`).join(', ')
  }
}

function noErrors(name: string, r: Measurement['load']): Check {
  const bad = r.unexpected + r.unanswered + r.connectionErrors + r.protocolErrors
  return {
    name, ok: bad === 0 && r.received > 0,
    detail: `statuses ${JSON.stringify(r.statuses)}, unexpected ${r.unexpected}, unanswered ${r.unanswered}, ` +
      `connection errors ${r.connectionErrors}, protocol errors ${r.protocolErrors}${r.errorSamples.length ? `; e.g. ${r.errorSamples.join(' | ')}` : ''}`,
  }
}

/** One publish before the load, so a broken setup fails with the gateway's own error message. */
async function probe(base: string, auth: string, body: string): Promise<void> {
  const res = await fetch(`${base}/channels/${channel('probe')}/messages`, { method: 'POST', headers: { Authorization: auth, 'Content-Type': 'application/json' }, body })
  if (res.status !== 201) throw new Error(`probe publish answered ${res.status}: ${await res.text()}`)
}

/** Counts the messages of all bench channels back from history (following `Link: rel="next"`). */
async function historyCheck(base: string, auth: string, acknowledged: number, where: string): Promise<Check> {
  const counts = await Promise.all(Array.from({ length: CHANNELS }, async (_, n) => {
    let count = 0
    let query = 'limit=1000'
    for (;;) {
      const res = await fetch(`${base}/channels/${channel(n)}/messages?${query}`, { headers: { Authorization: auth } })
      if (res.status !== 200) throw new Error(`history of ${channel(n)} answered ${res.status}: ${await res.text()}`)
      count += ((await res.json()) as unknown[]).length
      const next = /<\.\/messages\?([^>]*)>;\s*rel="next"/.exec(res.headers.get('link') ?? '')
      if (!next) return count
      query = next[1]!
    }
  }))
  const stored = counts.reduce((a, b) => a + b, 0)
  const full = counts.some((c) => c >= SHORT_RING_SIZE) ? ` (a channel filled its ring of ${SHORT_RING_SIZE}: raise SHORT_RING_SIZE)` : ''
  return { name: `publishes stored in history${where}`, ok: stored === acknowledged && !full, detail: `${stored} messages in history, ${acknowledged} acknowledged${full}` }
}
