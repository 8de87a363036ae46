/**
 * Leak and correctness soak: `npx bun bench/soak.ts --backend embedded|redis --minutes N`.
 *
 * Starts the gateway (embedded: one node; redis: a private redis-server and two nodes, publishes
 * to node A, steady subscribers on node B, the rest on both) and drives modest mixed traffic with
 * the official clients for N minutes (lib/soak-traffic.ts): realtime connections that come and go
 * (presence, ACKed publishes, renewing tokens), steady realtime subscribers and event streams that
 * reconnect, REST publishes and reads. Every `--sample-seconds` it records each node's RSS and its
 * `/metrics` gauges (and Redis's memory and key count). At the end it checks that
 * - every acknowledged publish to a steady channel reached every steady subscriber exactly once;
 * - every client gauge (connections, attachments, subscriptions, presence members...) is back to
 *   0 once the clients left, and what history keeps (embedded rings; Redis channel keys: streams,
 *   presence, presence history...) is gone once the retention passed (`--retention-seconds`, the
 *   gateway's HISTORY_TTL_MS, CHANNEL_IDLE_MS and IDEMPOTENCY_WINDOW_MS);
 * - memory levels off: the least-squares slope of each node's RSS (and Redis's used memory) over
 *   the second half of the run is at most `--max-slope` MB/hour, or within 3 standard errors of
 *   0 (it fails only on a growth the samples can tell from noise). A gateway's RSS rises and falls
 *   with its heap, a sawtooth of a few MB and minutes: its slope is asserted only over a second
 *   half of `--slope-window` minutes or more (a 2-hour run: the last hour, a dozen teeth).
 * Results (results.json, summary.md, charts) in bench/results/<time>-soak/; exits 1 when a check fails.
 *
 *   --backend embedded|redis   (default embedded)
 *   --minutes N                traffic time (default 120)
 *   --connections N            realtime connections coming and going at once (default 12)
 *   --rate N                   REST publishes per second (default 5)
 *   --reads N                  REST reads per second (default 1)
 *   --sample-seconds N         sampling period (default 10)
 *   --max-slope N              MB/hour of RSS growth allowed over the second half (default 10)
 *   --slope-window N           the gateways' RSS slope is asserted only when the second half is at least N minutes
 *                              (default 30; shorter, it is reported: it would measure the heap's sawtooth)
 *   --retention-seconds N      history retention of the gateway (default 60)
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { parseFlags } from './lib/args'
import { startDeployment } from './lib/deployment'
import { rssBytes as rssOf } from './lib/memory'
import { installCleanup, stopAll } from './lib/processes'
import { printTable, writeResults } from './lib/report'
import type { Check, RunOptions, ScenarioResult, Series } from './lib/scenario'
import { CLIENT_GAUGES, gaugesOf, redisProbe, RETENTION_GAUGES, slope, sumGauges } from './lib/soak-sampling'
import { SoakTraffic } from './lib/soak-traffic'

/** Redis key families of a channel (keys.ts): all gone once the channel's retention passed. */
const CHANNEL_FAMILIES = ['s', 'l', 'i', 'p', 'ph', 'occ', 'mv', 'mvi', 'cm', 'as', 'al', 'ct', 'lo']
const MB = 1024 * 1024

interface SamplePoint {
  /** Minutes since the traffic started. */
  t: number
  rssMb: number[]
  gauges: Record<string, number>
  redisMb?: number
  redisKeys?: number
  churning: number
}

async function main(): Promise<number> {
  const f = parseFlags(process.argv.slice(2), {
    backend: 'string',
    minutes: 'number',
    connections: 'number',
    rate: 'number',
    reads: 'number',
    'sample-seconds': 'number',
    'max-slope': 'number',
    'slope-window': 'number',
    'retention-seconds': 'number',
    help: 'boolean',
  })
  const backend = f.backend ?? 'embedded'
  if (f.help || (backend !== 'embedded' && backend !== 'redis')) {
    console.log(
      'usage: bun bench/soak.ts --backend embedded|redis --minutes N [--connections 12] [--rate 5] [--reads 1] ' +
        '[--sample-seconds 10] [--max-slope 10] [--slope-window 30] [--retention-seconds 60]',
    )
    return f.help ? 0 : 2
  }
  const minutes = f.minutes ?? 120
  const sampleMs = (f['sample-seconds'] ?? 10) * 1000
  const maxSlope = f['max-slope'] ?? 10
  const minWindow = f['slope-window'] ?? 30
  const retentionMs = (f['retention-seconds'] ?? 60) * 1000
  const startedAt = new Date().toISOString()
  const outDir = join(import.meta.dir, 'results', `${startedAt.replace(/[:.]/g, '-')}-soak`)
  mkdirSync(outDir, { recursive: true })
  installCleanup()
  const retention = String(retentionMs)
  const dep = await startDeployment(backend === 'redis' ? 'redis' : 'memory', {
    logDir: outDir,
    name: 'soak',
    env: { HISTORY_TTL_MS: retention, CHANNEL_IDLE_MS: retention, IDEMPOTENCY_WINDOW_MS: retention },
  })
  const probe = dep.redis ? await redisProbe(dep.redis.url, 'bench:') : undefined
  const nodes = dep.nodes.map((n) => n.base)
  const steadyChannels = Array.from({ length: 4 }, (_, i) => `soak-steady-${i}`)
  const traffic = new SoakTraffic({
    nodes,
    key: dep.key,
    steadyChannels,
    churnChannels: Array.from({ length: 20 }, (_, i) => `soak-churn-${i}`),
    connections: f.connections ?? 12,
    publishRate: f.rate ?? 5,
    readRate: f.reads ?? 1,
    tokenTtlMs: 120_000,
  })

  const samples: SamplePoint[] = []
  let t0 = performance.now()
  const cpu0 = process.cpuUsage()
  let serverCpu0 = 0
  const sample = async () => {
    const gauges = sumGauges(await Promise.all(nodes.map(gaugesOf)))
    const redis = await probe?.memory()
    const p: SamplePoint = {
      t: (performance.now() - t0) / 60_000,
      rssMb: dep.nodes.map((n) => (rssOf(n.pid) ?? 0) / MB),
      gauges,
      redisMb: redis && redis.usedBytes / MB,
      redisKeys: redis?.keys,
      churning: traffic.churning,
    }
    samples.push(p)
    const c = traffic.counts
    console.log(
      `${p.t.toFixed(1)} min: RSS ${p.rssMb.map((m) => m.toFixed(0)).join('+')} MB` +
        (p.redisMb === undefined ? '' : `, redis ${p.redisMb.toFixed(1)} MB ${p.redisKeys} keys`) +
        `, connections ${gauges.gateway_connections ?? 0}, presence ${gauges.gateway_presence_members ?? 0}` +
        `, acked ${traffic.ledger.ackedCount}, opened ${c.connectionsOpened}, reads ${c.reads}, errors ${c.connectionErrors + c.readErrors + traffic.ledger.failed}`,
    )
  }
  let sampling = false
  const sampler = setInterval(() => {
    if (sampling) return
    sampling = true
    sample()
      .catch((e) => console.error('sample:', (e as Error).message))
      .finally(() => (sampling = false))
  }, sampleMs)

  const checks: Check[] = []
  try {
    console.log(`soak on ${dep.label}: ${minutes} min of traffic; results in ${outDir}`)
    t0 = performance.now()
    serverCpu0 = dep.cpuSeconds()
    await traffic.start()
    await Bun.sleep(Math.max(0, minutes * 60_000 - (performance.now() - t0)))
    const trafficMin = (performance.now() - t0) / 60_000
    const cpu = process.cpuUsage(cpu0)
    const serverCpu = dep.cpuSeconds() - serverCpu0
    console.log('traffic stopped; waiting for deliveries, then for the gauges to return to 0')
    await traffic.stopLoad()
    const settleMs = await settle(
      () => traffic.ledger.complete(),
      () => deliveredCount(traffic),
      60_000,
    )
    const compared = traffic.ledger.compare()
    await traffic.close()
    const zeroMs = await waitUntil(async () => {
      const g = sumGauges(await Promise.all(nodes.map(gaugesOf)))
      return CLIENT_GAUGES.every((k) => !g[k])
    }, 60_000)
    const clientGauges = sumGauges(await Promise.all(nodes.map(gaugesOf)))
    const retentionLeft = async () => {
      const g = sumGauges(await Promise.all(nodes.map(gaugesOf)))
      const families = probe ? await probe.families() : {}
      const left: Record<string, number> = {}
      for (const k of RETENTION_GAUGES) if (g[k]) left[k] = g[k]!
      for (const fam of CHANNEL_FAMILIES) if (families[fam]?.keys) left[`redis ${fam}: keys`] = families[fam]!.keys
      return { left, families }
    }
    const goneMs = await waitUntil(
      async () => Object.keys((await retentionLeft()).left).length === 0,
      retentionMs + 60_000,
    )
    const after = await retentionLeft()
    await sample()
    clearInterval(sampler)

    const c = traffic.counts
    const ledger = traffic.ledger
    checks.push({
      name: 'every publish acknowledged',
      ok: ledger.failed === 0 && ledger.ackedCount > 0,
      detail: `${ledger.ackedCount} of ${ledger.sent} publishes acknowledged (${c.restPublishes} REST, ${c.realtimePublishes} realtime), ${ledger.failed} failed${eg(ledger.errors)}`,
    })
    for (const r of compared) {
      const rec = ledger.subscribers.find((s) => s.name === r.name)!
      checks.push({
        name: `${r.name}: every acknowledged publish received exactly once`,
        ok: r.missing === 0 && r.duplicates === 0 && r.foreign === 0 && rec.errors.length === 0,
        detail: `${r.want - r.missing} of ${r.want} received, ${r.missing} missing, ${r.duplicates} twice, ${r.foreign} foreign, ${settleMs === undefined ? 'not complete' : `complete ${fmtS(settleMs)} after the load stopped`}${eg(rec.errors)}`,
      })
    }
    checks.push({
      name: 'connections, presence and reads without errors',
      ok: c.connectionErrors === 0 && c.readErrors === 0 && traffic.errors.length === 0,
      detail: `${c.connectionsOpened} connections came and went (${c.connectionErrors} failed), ${c.presenceEvents} presence events, ${c.reads} REST reads (${c.readErrors} failed), ${c.tokensMinted} tokens minted, ${c.steadyRenewals} renewals by the steady subscribers${eg(traffic.errors)}`,
    })
    checks.push({
      name: 'every client gauge back to 0 once the clients left',
      ok: zeroMs !== undefined,
      detail: `${zeroMs === undefined ? 'not within 60 s' : `within ${fmtS(zeroMs)}`}: ${CLIENT_GAUGES.map((k) => `${k} ${clientGauges[k] ?? 0}`).join(', ')}`,
    })
    checks.push({
      name: 'history gone once its retention passed',
      ok: goneMs !== undefined,
      detail: `${goneMs === undefined ? `not within ${fmtS(retentionMs + 60_000)}` : `within ${fmtS(goneMs)} of the gauges' return`}; left: ${JSON.stringify(after.left)}`,
    })
    const trafficSamples = samples.filter((s) => s.t <= trafficMin)
    const half = trafficSamples.filter((s) => s.t >= trafficMin / 2)
    const slopes = dep.nodes.map((_, i) => ({
      name: nodeName(i, dep.nodes.length),
      ...slope(half.map((s) => [s.t / 60, s.rssMb[i]!])),
    }))
    if (probe) slopes.push({ name: 'redis used memory', ...slope(half.map((s) => [s.t / 60, s.redisMb!])) })
    const notes: string[] = []
    for (const s of slopes) {
      const detail = `${s.slope.toFixed(1)} MB/hour ± ${s.stderr.toFixed(1)} (standard error) over ${half.length} samples from ${(trafficMin / 2).toFixed(1)} to ${trafficMin.toFixed(1)} min`
      // a gateway's RSS follows its heap's sawtooth (minutes from one full collection to the
      // next): a fit over a few minutes measures the tooth, not a trend (redis-server has none)
      if (s.name.endsWith('RSS') && trafficMin / 2 < minWindow) {
        notes.push(
          `${s.name}: ${detail}; not asserted, the second half is under ${minWindow} min (--slope-window): too short to tell the garbage collector's sawtooth from growth`,
        )
        continue
      }
      checks.push({
        name: `${s.name} levels off over the second half`,
        ok: !(s.slope > maxSlope && s.slope > 3 * s.stderr),
        detail: `${detail} (fails above ${maxSlope} MB/hour when also above 3 standard errors)`,
      })
    }

    const first = trafficSamples[0]
    const last = trafficSamples[trafficSamples.length - 1]
    const result: ScenarioResult = {
      scenario: `soak (${backend})`,
      description: `${fmtM(trafficMin)} of mixed traffic with the official clients on ${dep.label}, then the clients leave and the retention (${retentionMs / 1000} s) passes.`,
      load:
        `${f.connections ?? 12} realtime connections coming and going, 2 steady realtime subscribers and 2 reconnecting event streams on ${steadyChannels.length} channels, ` +
        `${f.rate ?? 5} REST publishes/s, ${f.reads ?? 1} REST reads/s; the generator used ${(((cpu.user + cpu.system) / 1e6 / (trafficMin * 60)) * 100).toFixed(0)}% of a core, the gateway${probe ? ' nodes and redis-server' : ''} ${((serverCpu / (trafficMin * 60)) * 100).toFixed(0)}%`,
      measurements: [],
      tables: [
        {
          title: 'Memory',
          head: [
            'series',
            'first sample',
            'last sample of the traffic',
            'after the drain',
            'slope, second half (MB/h)',
          ],
          rows: slopes.map((s, i) => {
            const pick = (p?: SamplePoint) => (p ? (i < dep.nodes.length ? p.rssMb[i]! : p.redisMb!) : NaN)
            return [
              s.name,
              mb(pick(first)),
              mb(pick(last)),
              mb(pick(samples[samples.length - 1])),
              `${s.slope.toFixed(1)} ± ${s.stderr.toFixed(1)}`,
            ]
          }),
        },
        {
          title: 'Traffic',
          head: ['what', 'count'],
          rows: [
            ['publishes acknowledged', String(ledger.ackedCount)],
            ['realtime connections that came and went', String(c.connectionsOpened)],
            ['presence events of those', String(c.presenceEvents)],
            ['REST reads', String(c.reads)],
            ['tokens minted (token requests exchanged)', String(c.tokensMinted)],
            ['event-stream reconnects', String(c.sseReconnects)],
            ['steady subscriber disconnects (resumed)', String(c.steadyDisconnects)],
          ],
        },
      ],
      details: { samples, families: after.families, counts: c },
      ratios: {},
      checks,
      notes,
      charts: [
        {
          kind: 'line',
          file: 'memory.svg',
          title: 'Resident memory',
          xLabel: 'minutes',
          yLabel: 'MB',
          series: memorySeries(samples, dep.nodes.length, !!probe),
        },
        {
          kind: 'line',
          file: 'gauges.svg',
          title: 'Client gauges (all nodes)',
          xLabel: 'minutes',
          yLabel: 'count',
          series: [
            'gateway_connections',
            'gateway_realtime_attachments',
            'gateway_presence_members',
            'gateway_subscriptions',
          ].map((k) => ({
            name: k.replace('gateway_', ''),
            points: samples.map((s) => [s.t, s.gauges[k] ?? 0] as [number, number]),
          })),
        },
      ],
    }
    printTable(result)
    const o: RunOptions = {
      seconds: minutes * 60,
      warmup: 0,
      connections: 0,
      pipeline: 1,
      short: false,
      outDir,
      redis: !!probe,
      rateLimits: false,
    }
    await writeResults(result, o, startedAt)
    console.log(`\nresults: ${outDir}/{results.json,summary.md}`)
    const failed = checks.filter((c) => !c.ok)
    if (failed.length) console.error(`\nSOAK FAILED: ${failed.map((c) => c.name).join('; ')}`)
    return failed.length ? 1 : 0
  } finally {
    clearInterval(sampler)
    await probe?.close().catch(() => {})
    await dep.stop()
    await stopAll()
  }
}

const mb = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : 'n/a')
const fmtS = (ms: number) => `${(ms / 1000).toFixed(1)} s`
const fmtM = (min: number) => `${min.toFixed(1)} min`
const eg = (errors: string[]) => (errors.length ? `; e.g. ${errors.slice(0, 3).join(' | ')}` : '')

const nodeName = (i: number, nodes: number) => (nodes === 1 ? 'gateway RSS' : `node ${String.fromCharCode(65 + i)} RSS`)

function memorySeries(samples: SamplePoint[], nodes: number, redis: boolean): Series[] {
  const out: Series[] = Array.from({ length: nodes }, (_, i) => ({
    name: nodeName(i, nodes),
    points: samples.map((s) => [s.t, s.rssMb[i]!] as [number, number]),
  }))
  if (redis) out.push({ name: 'redis used memory', points: samples.map((s) => [s.t, s.redisMb!] as [number, number]) })
  return out
}

function deliveredCount(t: SoakTraffic): number {
  let n = 0
  for (const r of t.ledger.subscribers) for (const s of r.got.values()) n += s.size
  return n
}

/** Waits until `done`, or until `progress` stops growing for 10 s, at most `maxMs`; the time it took, or undefined. */
async function settle(done: () => boolean, progress: () => number, maxMs: number): Promise<number | undefined> {
  const start = performance.now()
  let last = progress()
  let lastAt = start
  while (!done()) {
    const now = performance.now()
    if (now - start > maxMs) return undefined
    const p = progress()
    if (p !== last) [last, lastAt] = [p, now]
    else if (now - lastAt > 10_000) return undefined
    await Bun.sleep(200)
  }
  return performance.now() - start
}

/** Polls `ok` every second until it holds (the time it took) or `maxMs` passed (undefined). */
async function waitUntil(ok: () => Promise<boolean>, maxMs: number): Promise<number | undefined> {
  const start = performance.now()
  for (;;) {
    if (await ok().catch(() => false)) return performance.now() - start
    if (performance.now() - start > maxMs) return undefined
    await Bun.sleep(1000)
  }
}

process.exit(await main())
