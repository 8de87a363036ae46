/**
 * REST publish throughput: the bare Bun.serve hello world first (the ceiling on this machine),
 * then `POST /channels/bench-<i % 100>/messages` against the gateway with a 100-byte JSON message
 * and Basic auth. Every publish must be answered 201; in short mode the published messages are
 * also counted back from channel history.
 */
import { runLoadgen, type LoadSpec } from '../lib/loadgen-client'
import type { Check, Measurement, RunOptions, ScenarioResult } from '../lib/scenario'
import { startBaseline, startGateway, type Target } from '../lib/targets'

const CHANNELS = 100
/** 100 × 20,000 messages would need > 500k publishes/s over a short run. */
const SHORT_RING_SIZE = 20_000
const channel = (n: number | string) => `bench-${n}`

/** `{"name":"bench","data":"xxx…"}`, exactly `bytes` long. */
export function messageBody(bytes = 100): string {
  const empty = JSON.stringify({ name: 'bench', data: '' })
  return JSON.stringify({ name: 'bench', data: 'x'.repeat(Math.max(0, bytes - empty.length)) })
}

async function withTarget<T extends Target, R>(start: Promise<T>, fn: (t: T) => Promise<R>): Promise<R> {
  const target = await start
  try { return await fn(target) } finally { await target.stop() }
}

export async function publishScenario(o: RunOptions): Promise<ScenarioResult> {
  const load = { seconds: o.seconds, warmup: o.warmup, connections: o.connections, pipeline: o.pipeline }
  const measurements: Measurement[] = []
  const checks: Check[] = []
  const body = messageBody()

  console.log(`baseline: Bun.serve hello world, ${o.warmup} s warm-up + ${o.seconds} s …`)
  const baseline = await withTarget(startBaseline(o.outDir), (t) => runLoadgen({ ...load, url: `${t.base}/`, serverPid: t.pid }))
  measurements.push({ target: 'baseline', request: 'GET / (hello world)', load: baseline })
  checks.push(noErrors('baseline answered every request 200', baseline))

  console.log(`gateway: publish to ${CHANNELS} channels, ${o.warmup} s warm-up + ${o.seconds} s …`)
  // short mode counts every message back from history, so the per-channel ring must hold them all
  const env = o.short ? { RING_SIZE: String(SHORT_RING_SIZE) } : undefined
  let stored: Check | undefined
  const publish = await withTarget(startGateway({ logDir: o.outDir, env }), async (t) => {
    const auth = `Basic ${Buffer.from(t.key).toString('base64')}`
    await probe(t.base, auth, body)
    const spec: LoadSpec = {
      ...load, url: `${t.base}/channels/${channel('{n}')}/messages`, variants: CHANNELS, method: 'POST', body, expectStatus: 201,
      headers: [`Authorization: ${auth}`, 'Content-Type: application/json'], serverPid: t.pid,
    }
    const r = await runLoadgen(spec)
    if (o.short) stored = await historyCheck(t.base, auth, r.statuses['201'] ?? 0)
    return r
  })
  measurements.push({ target: 'gateway', request: `POST /channels/bench-N/messages (${Buffer.byteLength(body)} B JSON)`, load: publish })
  checks.push(noErrors('every publish answered 201', publish))
  checks.push({
    name: 'publishes acknowledged', ok: (publish.statuses['201'] ?? 0) > 0 && publish.statuses['201'] === publish.sent,
    detail: `${publish.statuses['201'] ?? 0} of ${publish.sent} publishes answered 201`,
  })
  if (stored) checks.push(stored)

  const notes = measurements.filter((m) => m.load.cpuPercent > 90)
    .map((m) => `load generator used ${m.load.cpuPercent.toFixed(0)}% of a core against ${m.target}: it may have been the bottleneck there`)
  return {
    scenario: 'publish',
    description: 'REST publish throughput of the gateway compared with a bare Bun.serve hello world on the same machine.',
    measurements,
    ratios: { 'publish/s ÷ baseline req/s': publish.rps / baseline.rps },
    checks,
    notes,
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
async function historyCheck(base: string, auth: string, acknowledged: number): Promise<Check> {
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
  return { name: 'publishes stored in history', ok: stored === acknowledged && !full, detail: `${stored} messages in history, ${acknowledged} acknowledged${full}` }
}
