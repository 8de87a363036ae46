/**
 * Latency: publishes at a fixed rate (default 2,000/s) to one channel with a handful of SSE
 * subscribers (default 5); each message carries its send time (µs, `performance.timeOrigin +
 * performance.now()` of the publisher process) and the subscriber process subtracts it from the
 * time the socket read holding the record arrived. Reports publish-to-delivery percentiles over
 * the measured window and checks that nothing was lost, duplicated or reordered. With --redis the
 * run is repeated against a Redis cluster: publishes to node A, subscribers on node B (every
 * delivery crosses nodes).
 */
import { cutNote, deliveryChecks, fmt, openedCheck, publishCheck } from '../lib/delivery-checks'
import { backendsOf, startDeployment, type Backend } from '../lib/deployment'
import { distribution, type Distribution } from '../lib/percentiles'
import { sameChannel, startPublisher } from '../lib/publisher-client'
import type { Chart, Check, Headline, RunOptions, ScenarioResult, Series } from '../lib/scenario'
import { startSubscribers } from '../lib/sse-subscriber-client'
import { Timeline } from '../lib/timeline'

const CHANNEL = 'latency'
const MESSAGE_BYTES = 100
/** Publishing connections (lanes); each has one publish in flight at a time, so per-connection order is defined. */
const CONNECTIONS = 8

interface Run {
  backend: Backend
  achieved: number
  delivery: Distribution
  publish: Distribution
  gatewayCpuPercent: number
  publisherMaxLagMs: number
}

const ms = (us: number) => us / 1000
const inMs = (d: Distribution) => Object.fromEntries(Object.entries(d).map(([k, v]) => [k, k === 'count' ? v : ms(v)]))

export async function latencyScenario(o: RunOptions): Promise<ScenarioResult> {
  const subscribers = o.subscribers ?? 5
  const rate = o.rate ?? 2000
  const checks: Check[] = []
  const notes: string[] = []
  const runs: Run[] = []
  const series: Series[] = []

  for (const backend of backendsOf(o)) {
    const label = `latency${o.redis ? ` (${backend})` : ''}`
    console.log(`${label}: ${rate} publishes/s to ${subscribers} subscribers, ${o.warmup} s warm-up + ${o.seconds} s …`)
    const env: Record<string, string> = o.sseBufferBytes ? { SSE_BUFFER_BYTES: String(o.sseBufferBytes) } : {}
    const d = await startDeployment(backend, {
      logDir: o.outDir,
      env,
      cpuProfile: o.profile,
      name: `gateway-${backend}`,
    })
    try {
      const subs = await startSubscribers({
        base: d.subscribeTo.base,
        channel: CHANNEL,
        key: d.key,
        count: subscribers,
        publishers: CONNECTIONS,
        latency: true,
        logDir: o.outDir,
        cpuProfile: o.profile,
        name: `subscriber-${backend}`,
      })
      try {
        checks.push(openedCheck(label, subscribers, subs.opened))
        if (subs.opened.established !== subscribers) throw new Error(`streams did not open: ${checks.at(-1)!.detail}`)
        const pub = await startPublisher({
          base: d.publishTo.base,
          logDir: o.outDir,
          lanes: sameChannel(CONNECTIONS, CHANNEL, d.key),
          connections: CONNECTIONS,
          pipeline: 1,
          rate: rate / CONNECTIONS,
          stamps: true,
          bytes: MESSAGE_BYTES,
          cpuProfile: o.profile,
          name: `publisher-${backend}`,
        })
        const timeline = new Timeline(label, async () => {
          const [s, p] = await Promise.all([subs.snapshot(), pub.counts()])
          return { counters: { publishes: p.published, deliveries: s.received } }
        }).start()
        await Bun.sleep(o.warmup * 1000)
        await Promise.all([subs.resetLatencies(), pub.reset()])
        const a = { t: performance.now(), p: await pub.counts(), cpu: d.cpuSeconds() }
        await Bun.sleep(o.seconds * 1000)
        const b = { t: performance.now(), p: await pub.counts(), cpu: d.cpuSeconds() }
        const published = await pub.stop()
        const settled = await subs.settle(published.acked, 20_000)
        for (const s of await timeline.stop())
          series.push({ ...s, name: `${s.name}${o.redis ? `, ${backend}` : ''}`, dashed: backend === 'redis' })
        const dt = (b.t - a.t) / 1000
        const delivery = distribution(settled.latencies ?? [])
        const achieved = (b.p.published - a.p.published) / dt
        runs.push({
          backend,
          achieved,
          delivery,
          publish: published.latencyUs,
          gatewayCpuPercent: Math.round(((b.cpu - a.cpu) / dt) * 100),
          publisherMaxLagMs: published.maxLagMs,
        })

        checks.push(publishCheck(label, published))
        checks.push(...deliveryChecks(label, subscribers, published.published, settled))
        checks.push({
          name: `${label}: the publisher kept the rate`,
          ok: achieved >= rate * 0.95,
          detail: `${fmt(achieved)} publishes/s of ${fmt(rate)} asked; a publish fell at most ${published.maxLagMs.toFixed(1)} ms behind schedule`,
        })
        notes.push(...cutNote(settled).map((n) => `${label}: ${n}`))
        if (delivery.min < 0)
          notes.push(
            `${label}: negative latency (${ms(delivery.min).toFixed(3)} ms): the two processes' wall clocks disagree; percentiles are off by about that much`,
          )
        if (published.maxLagMs > 5)
          notes.push(
            `${label}: the publisher fell up to ${published.maxLagMs.toFixed(1)} ms behind its schedule (a connection still waiting for its previous answer, or a late timer): those messages were sent late, their latency counts from the actual send`,
          )
      } finally {
        await subs.close()
      }
    } finally {
      await d.stop()
    }
  }

  const PCT = [
    ['min', 'min'],
    ['p50', 'p50'],
    ['p90', 'p90'],
    ['p99', 'p99'],
    ['p99.9', 'p999'],
    ['max', 'max'],
  ] as const
  const headlines: Headline[] = runs.flatMap((r) => [
    { name: `p50 latency (${r.backend})`, value: ms(r.delivery.p50), unit: 'ms' },
    { name: `p99 latency (${r.backend})`, value: ms(r.delivery.p99), unit: 'ms' },
    { name: `p99.9 latency (${r.backend})`, value: ms(r.delivery.p999), unit: 'ms' },
    { name: `achieved publish rate (${r.backend})`, value: r.achieved, unit: '/s' },
  ])
  const charts: Chart[] = [
    {
      file: 'throughput.svg',
      title: 'Publishes and deliveries per second (warm-up included)',
      kind: 'line',
      xLabel: 'seconds',
      yLabel: 'per second',
      series,
    },
    {
      file: 'latency.svg',
      title: 'Publish-to-delivery latency percentiles (ms)',
      kind: 'bar',
      yLabel: 'ms',
      categories: PCT.slice(1, 5).map(([n]) => n),
      groups: runs.map((r) => ({ name: r.backend, values: PCT.slice(1, 5).map(([, k]) => ms(r.delivery[k])) })),
    },
  ]
  return {
    scenario: 'latency',
    description:
      `Publish-to-delivery latency at a fixed rate: ${fmt(rate)} publishes/s of ${MESSAGE_BYTES}-byte messages over ${CONNECTIONS} ` +
      `keep-alive connections to one channel, ${subscribers} SSE subscribers in a separate process. Latency = time the subscriber's ` +
      'socket read holding the record arrived − time the publisher wrote the publish (wall clock with sub-ms resolution in both processes).' +
      (o.redis
        ? ' Repeated against Redis (own redis-server, two gateway nodes): publishes to node A, subscribers on node B.'
        : ''),
    load: `${fmt(rate)} publishes/s, ${subscribers} subscribers, ${o.warmup} s warm-up + ${o.seconds} s measured${o.redis ? ' per backend' : ''}`,
    measurements: [],
    tables: [
      {
        title: 'Publish-to-delivery latency (ms)',
        head: ['percentile', ...runs.map((r) => `${r.backend} (${fmt(r.delivery.count)} deliveries)`)],
        rows: PCT.map(([n, k]) => [n, ...runs.map((r) => ms(r.delivery[k]).toFixed(3))]),
      },
      {
        title: 'Publish latency: write to 201 (ms)',
        head: ['percentile', ...runs.map((r) => r.backend)],
        rows: PCT.map(([n, k]) => [n, ...runs.map((r) => ms(r.publish[k]).toFixed(3))]),
      },
    ],
    headlines,
    ratios: {},
    checks,
    notes,
    charts,
    details: {
      subscribers,
      rate,
      runs: runs.map((r) => ({ ...r, delivery: inMs(r.delivery), publish: inMs(r.publish) })),
    },
  }
}
