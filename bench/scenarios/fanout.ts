/**
 * Fanout: one channel, N event-stream subscribers held by a separate subscriber process, and P
 * publishing keep-alive connections (one run per P, default 1 and 20), each publishing the next
 * sequence number as soon as the previous one is acknowledged, for `seconds` after `warmup`.
 * Reports deliveries/s (messages received, summed over subscribers, per second) and publishes/s.
 * After the publishers stop it waits until every subscriber has every acknowledged message, and
 * fails if any subscriber lost, duplicated or reordered one.
 */
import { cpuSeconds } from '../lib/cpu'
import { cutNote, deliveryChecks, fmt, openedCheck, publishCheck } from '../lib/delivery-checks'
import { rssBytes } from '../lib/memory'
import { startPublisher } from '../lib/publisher-client'
import type { Check, Headline, RunOptions, ScenarioResult } from '../lib/scenario'
import { startSubscribers } from '../lib/sse-subscriber-client'
import { startGateway } from '../lib/targets'

const TARGET_DELIVERIES = 1_500_000
const TARGET_PUBLISHERS = 20
const MESSAGE_BYTES = 100
const CHANNEL = 'fanout'

interface Run {
  publishers: number
  seconds: number
  publishesPerSec: number
  deliveriesPerSec: number
  /** deliveries/s ÷ (publishes/s × subscribers): 1 when the subscribers kept pace. */
  keptPace: number
  drainMs: number
  cpu: { gateway: number; subscribers: number; publisher: number }
  gatewayRssMiB: number
}

export async function fanoutScenario(o: RunOptions): Promise<ScenarioResult> {
  const subscribers = o.subscribers ?? (o.short ? 100 : 1000)
  const publisherCounts = o.publishers ?? [1, TARGET_PUBLISHERS]
  const settleMs = o.short ? 20_000 : 60_000
  const runs: Run[] = []
  const checks: Check[] = []
  const notes: string[] = []

  for (const P of publisherCounts) {
    const label = `${P} publisher${P === 1 ? '' : 's'}`
    console.log(`fanout: ${fmt(subscribers)} subscribers, ${label}, ${o.warmup} s warm-up + ${o.seconds} s …`)
    const env: Record<string, string> = o.sseBufferBytes ? { SSE_BUFFER_BYTES: String(o.sseBufferBytes) } : {}
    const gw = await startGateway({ logDir: o.outDir, name: `gateway-p${P}`, env, cpuProfile: o.profile, fdLimit: subscribers + 1024 })
    try {
      const subs = await startSubscribers({
        base: gw.base, channel: CHANNEL, key: gw.key, count: subscribers, publishers: P, logDir: o.outDir, fdLimit: subscribers + 1024, cpuProfile: o.profile, name: `subscriber-p${P}`,
      })
      try {
        checks.push(openedCheck(label, subscribers, subs.opened))
        if (subs.opened.established !== subscribers) continue
        const pub = await startPublisher({
          base: gw.base, logDir: o.outDir, channel: CHANNEL, auth: `Basic ${Buffer.from(gw.key).toString('base64')}`,
          connections: P, pipeline: 1, rate: 0, stamps: false, bytes: MESSAGE_BYTES, cpuProfile: o.profile, name: `publisher-p${P}`,
        })
        const sample = async () => {
          const [s, p] = await Promise.all([subs.snapshot(), pub.counts()])
          return { t: performance.now(), s, p, cpu: [cpuSeconds(gw.pid) ?? 0, subs.cpuSeconds(), pub.cpuSeconds()] as const }
        }
        await Bun.sleep(o.warmup * 1000)
        const a = await sample()
        await Bun.sleep(o.seconds * 1000)
        const b = await sample()
        const published = await pub.stop()
        const settled = await subs.settle(published.acked, settleMs)
        const dt = (b.t - a.t) / 1000
        const pct = (i: 0 | 1 | 2) => Math.round(((b.cpu[i] - a.cpu[i]) / dt) * 100)
        const run: Run = {
          publishers: P, seconds: dt,
          publishesPerSec: (b.p.published - a.p.published) / dt,
          deliveriesPerSec: (b.s.received - a.s.received) / dt,
          keptPace: 0, drainMs: settled.ms,
          cpu: { gateway: pct(0), subscribers: pct(1), publisher: pct(2) },
          gatewayRssMiB: (rssBytes(gw.pid) ?? 0) / 2 ** 20,
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
      await gw.stop()
    }
  }

  const headlines: Headline[] = runs.map((r) => ({
    name: `deliveries/s with ${r.publishers} publisher${r.publishers === 1 ? '' : 's'}`, value: r.deliveriesPerSec, unit: '/s',
    ...(r.publishers === TARGET_PUBLISHERS ? { target: `≥ ${fmt(TARGET_DELIVERIES)}`, met: r.deliveriesPerSec >= TARGET_DELIVERIES } : {}),
  }))
  return {
    scenario: 'fanout',
    description: `Event-stream fanout: one channel, ${fmt(subscribers)} SSE subscribers in a separate process, publishers on keep-alive ` +
      `connections each sending its next ${MESSAGE_BYTES}-byte message when the previous one is acknowledged. Deliveries/s = messages ` +
      'received summed over subscribers per second of the measured window.',
    load: `${fmt(subscribers)} subscribers; ${publisherCounts.join(' and ')} publishing connection(s), pipeline 1; ${o.warmup} s warm-up + ${o.seconds} s measured per run` +
      `${o.sseBufferBytes ? `; SSE_BUFFER_BYTES=${o.sseBufferBytes}` : ''}`,
    measurements: [],
    tables: [{
      title: 'Runs',
      head: ['publishers', 'publishes/s', 'deliveries/s', 'kept pace', 'drain after stop', 'gateway CPU', 'subscriber CPU', 'publisher CPU', 'gateway RSS'],
      rows: runs.map((r) => [String(r.publishers), fmt(r.publishesPerSec), fmt(r.deliveriesPerSec), `${(r.keptPace * 100).toFixed(1)}%`,
        `${fmt(r.drainMs)} ms`, `${r.cpu.gateway}%`, `${r.cpu.subscribers}%`, `${r.cpu.publisher}%`, `${r.gatewayRssMiB.toFixed(0)} MiB`]),
    }],
    headlines,
    ratios: {},
    checks,
    notes,
    details: { subscribers, runs },
  }
}
