/**
 * Fanout: one channel, N event-stream subscribers held by a separate subscriber process, and P
 * publishing keep-alive connections (one run per P, default 1 and 20), each publishing the next
 * sequence number as soon as the previous one is acknowledged, for `seconds` after `warmup`.
 * Reports deliveries/s (messages received, summed over subscribers, per second) and publishes/s.
 * After the publishers stop it waits until every subscriber has every acknowledged message, and
 * fails if any subscriber lost, duplicated or reordered one. With --redis every run is repeated
 * against a Redis cluster: publishers on node A, subscribers on node B.
 *
 * Publishers are flow-controlled (flow-control.ts): at most `window` (default 500) messages ahead
 * of the slowest subscriber, in both backends. On one node the gateway's shared event loop holds
 * publishers back by itself; across nodes nothing does, and unbounded publishing (--window 0)
 * outruns node B's fanout until it cuts every stream as too slow (80020).
 */
import { cutNote, deliveryChecks, fmt, openedCheck, publishCheck } from '../lib/delivery-checks'
import { holdToSlowestSubscriber } from '../lib/flow-control'
import { backendsOf, startDeployment, type Backend } from '../lib/deployment'
import { sameChannel, startPublisher } from '../lib/publisher-client'
import type { Check, Headline, RunOptions, ScenarioResult, Series } from '../lib/scenario'
import { startSubscribers } from '../lib/sse-subscriber-client'
import { measureDeliveryWindow } from '../lib/measure-window'

const TARGET_DELIVERIES = 1_500_000
const TARGET_PUBLISHERS = 20
const MESSAGE_BYTES = 100
const CHANNEL = 'fanout'
const WINDOW = 500

interface Run {
  backend: Backend
  publishers: number
  seconds: number
  publishesPerSec: number
  deliveriesPerSec: number
  /** deliveries/s ÷ (publishes/s × subscribers): 1 when the subscribers kept pace. */
  keptPace: number
  drainMs: number
  cpu: { gateway: number; subscribers: number; publisher: number }
  gatewayRssMiB: number
  /** Share of flow-control checks that found the publishers at their allowance. */
  heldBack: number
}

export async function fanoutScenario(o: RunOptions): Promise<ScenarioResult> {
  const subscribers = o.subscribers ?? (o.short ? 100 : 1000)
  const publisherCounts = o.publishers ?? [1, TARGET_PUBLISHERS]
  const settleMs = o.short ? 20_000 : 60_000
  const window = o.window ?? WINDOW
  const runs: Run[] = []
  const checks: Check[] = []
  const notes: string[] = []
  const series: Series[] = []

  for (const P of publisherCounts) {
    for (const backend of backendsOf(o)) {
      const label = `${P} publisher${P === 1 ? '' : 's'}${o.redis ? `, ${backend}` : ''}`
      console.log(`fanout: ${fmt(subscribers)} subscribers, ${label}, ${o.warmup} s warm-up + ${o.seconds} s …`)
      const env: Record<string, string> = o.sseBufferBytes ? { SSE_BUFFER_BYTES: String(o.sseBufferBytes) } : {}
      const d = await startDeployment(backend, { logDir: o.outDir, name: `gateway-p${P}-${backend}`, env, cpuProfile: o.profile, fdLimit: subscribers + 1024 })
      try {
        const subs = await startSubscribers({
          base: d.subscribeTo.base, channel: CHANNEL, key: d.key, count: subscribers, publishers: P, logDir: o.outDir, fdLimit: subscribers + 1024,
          cpuProfile: o.profile, name: `subscriber-p${P}-${backend}`,
        })
        try {
          checks.push(openedCheck(label, subscribers, subs.opened))
          if (subs.opened.established !== subscribers) continue
          const pub = await startPublisher({
            base: d.publishTo.base, logDir: o.outDir, lanes: sameChannel(P, CHANNEL, d.key),
            connections: P, pipeline: 1, rate: 0, stamps: false, bytes: MESSAGE_BYTES, cpuProfile: o.profile, name: `publisher-p${P}-${backend}`,
            ...(window > 0 ? { allowance: window } : {}),
          })
          const flow = window > 0 ? holdToSlowestSubscriber(pub, subs, window) : undefined
          const { a, b, timeline } = await measureDeliveryWindow(label, d, subs, pub, o.warmup, o.seconds)
          const held = await flow?.stop()
          const published = await pub.stop()
          const settled = await subs.settle(published.acked, settleMs)
          const perSecond = await timeline.stop()
          series.push(...perSecond.filter((s) => s.name === 'deliveries/s').map((s) => ({ ...s, name: `deliveries/s, ${label}`, dashed: backend === 'redis' })))
          const dt = (b.t - a.t) / 1000
          const pct = (i: 0 | 1 | 2) => Math.round(((b.cpu[i] - a.cpu[i]) / dt) * 100)
          const run: Run = {
            backend, publishers: P, seconds: dt,
            publishesPerSec: (b.p.published - a.p.published) / dt,
            deliveriesPerSec: (b.s.received - a.s.received) / dt,
            keptPace: 0, drainMs: settled.ms,
            cpu: { gateway: pct(0), subscribers: pct(1), publisher: pct(2) },
            gatewayRssMiB: d.rssBytes() / 2 ** 20,
            heldBack: held ? held.heldBack / Math.max(1, held.checks) : 0,
          }
          run.keptPace = run.deliveriesPerSec / (run.publishesPerSec * subscribers)
          runs.push(run)
          checks.push(publishCheck(label, published))
          checks.push(...deliveryChecks(label, subscribers, published.published, settled))
          notes.push(...cutNote(settled).map((n) => `${label}: ${n}`))
          if (run.cpu.subscribers > 90) notes.push(`${label}: the subscriber process used ${run.cpu.subscribers}% of a core: it may have been the bottleneck`)
        } finally {
          await subs.close()
        }
      } finally {
        await d.stop()
      }
    }
  }

  const headlines: Headline[] = runs.map((r) => ({
    name: `deliveries/s with ${r.publishers} publisher${r.publishers === 1 ? '' : 's'} (${r.backend})`, value: r.deliveriesPerSec, unit: '/s',
    ...(r.publishers === TARGET_PUBLISHERS && r.backend === 'memory' ? { target: `≥ ${fmt(TARGET_DELIVERIES)}`, met: r.deliveriesPerSec >= TARGET_DELIVERIES } : {}),
  }))
  return {
    scenario: 'fanout',
    description: `Event-stream fanout: one channel, ${fmt(subscribers)} SSE subscribers in a separate process, publishers on keep-alive ` +
      `connections each sending its next ${MESSAGE_BYTES}-byte message when the previous one is acknowledged. Deliveries/s = messages ` +
      'received summed over subscribers per second of the measured window.' +
      (o.redis ? ' Each run is repeated against Redis (own redis-server, two gateway nodes): publishers on node A, subscribers on node B; gateway CPU is both nodes plus redis-server.' : ''),
    load: `${fmt(subscribers)} subscribers; ${publisherCounts.join(' and ')} publishing connection(s), pipeline 1, ` +
      `${window > 0 ? `at most ${fmt(window)} messages ahead of the slowest subscriber` : 'no flow control'}; ${o.warmup} s warm-up + ${o.seconds} s measured per run` +
      `${o.sseBufferBytes ? `; SSE_BUFFER_BYTES=${o.sseBufferBytes}` : ''}`,
    measurements: [],
    tables: [{
      title: 'Runs',
      head: ['backend', 'publishers', 'publishes/s', 'deliveries/s', 'kept pace', 'held back by flow control', 'drain after stop', 'gateway CPU', 'subscriber CPU', 'publisher CPU', 'gateway RSS'],
      rows: runs.map((r) => [r.backend, String(r.publishers), fmt(r.publishesPerSec), fmt(r.deliveriesPerSec), `${(r.keptPace * 100).toFixed(1)}%`,
        window > 0 ? `${(r.heldBack * 100).toFixed(0)}% of checks` : 'off',
        `${fmt(r.drainMs)} ms`, `${r.cpu.gateway}%`, `${r.cpu.subscribers}%`, `${r.cpu.publisher}%`, `${r.gatewayRssMiB.toFixed(0)} MiB`]),
    }],
    headlines,
    ratios: {},
    checks,
    notes,
    details: { subscribers, runs },
    charts: [{ file: 'throughput.svg', title: 'Deliveries per second over each run (warm-up included)', kind: 'line', xLabel: 'seconds', yLabel: 'deliveries/s', series }],
  }
}
