/**
 * Latency: publishes at a fixed rate (default 2,000/s) to one channel with a handful of SSE
 * subscribers (default 5); each message carries its send time (µs, `performance.timeOrigin +
 * performance.now()` of the publisher process) and the subscriber process subtracts it from the
 * time the socket read holding the record arrived. Reports publish-to-delivery percentiles over
 * the measured window and checks that nothing was lost, duplicated or reordered.
 */
import { cpuSeconds } from '../lib/cpu'
import { cutNote, deliveryChecks, fmt, openedCheck, publishCheck } from '../lib/delivery-checks'
import { distribution } from '../lib/percentiles'
import { startPublisher } from '../lib/publisher-client'
import type { Check, RunOptions, ScenarioResult } from '../lib/scenario'
import { startSubscribers } from '../lib/sse-subscriber-client'
import { startGateway } from '../lib/targets'

const CHANNEL = 'latency'
const MESSAGE_BYTES = 100
/** Publishing connections; each has one publish in flight at a time, so per-connection order is defined. */
const CONNECTIONS = 8

export async function latencyScenario(o: RunOptions): Promise<ScenarioResult> {
  const subscribers = o.subscribers ?? 5
  const rate = o.rate ?? 2000
  const checks: Check[] = []
  const notes: string[] = []
  console.log(`latency: ${rate} publishes/s to ${subscribers} subscribers, ${o.warmup} s warm-up + ${o.seconds} s …`)

  const env: Record<string, string> = o.sseBufferBytes ? { SSE_BUFFER_BYTES: String(o.sseBufferBytes) } : {}
  const gw = await startGateway({ logDir: o.outDir, env, cpuProfile: o.profile })
  try {
    const subs = await startSubscribers({ base: gw.base, channel: CHANNEL, key: gw.key, count: subscribers, publishers: CONNECTIONS, latency: true, logDir: o.outDir, cpuProfile: o.profile })
    try {
      checks.push(openedCheck('latency', subscribers, subs.opened))
      if (subs.opened.established !== subscribers) throw new Error(`streams did not open: ${checks.at(-1)!.detail}`)
      const pub = await startPublisher({
        base: gw.base, logDir: o.outDir, channel: CHANNEL, auth: `Basic ${Buffer.from(gw.key).toString('base64')}`,
        connections: CONNECTIONS, pipeline: 1, rate, stamps: true, bytes: MESSAGE_BYTES, cpuProfile: o.profile,
      })
      await Bun.sleep(o.warmup * 1000)
      await subs.resetLatencies()
      const a = { t: performance.now(), p: await pub.counts(), cpu: cpuSeconds(gw.pid) ?? 0 }
      await Bun.sleep(o.seconds * 1000)
      const b = { t: performance.now(), p: await pub.counts(), cpu: cpuSeconds(gw.pid) ?? 0 }
      const published = await pub.stop()
      const settled = await subs.settle(published.acked, 20_000)
      const dt = (b.t - a.t) / 1000
      const ms = (us: number) => us / 1000
      const d = distribution(settled.latencies ?? [])
      const achieved = (b.p.published - a.p.published) / dt

      checks.push(publishCheck('latency', published))
      checks.push(...deliveryChecks('latency', subscribers, published.published, settled))
      checks.push({
        name: 'latency: the publisher kept the rate', ok: achieved >= rate * 0.95,
        detail: `${fmt(achieved)} publishes/s of ${fmt(rate)} asked; a publish fell at most ${published.maxLagMs.toFixed(1)} ms behind schedule`,
      })
      notes.push(...cutNote(settled))
      if (d.min < 0) notes.push(`negative latency (${ms(d.min).toFixed(3)} ms): the two processes' wall clocks disagree; percentiles are off by about that much`)
      if (published.maxLagMs > 5) notes.push(`the publisher fell up to ${published.maxLagMs.toFixed(1)} ms behind its schedule (all ${CONNECTIONS} connections busy or a late timer): those messages were sent late, their latency counts from the actual send`)

      const row = (name: string, v: number) => [name, ms(v).toFixed(3)]
      return {
        scenario: 'latency',
        description: `Publish-to-delivery latency at a fixed rate: ${fmt(rate)} publishes/s of ${MESSAGE_BYTES}-byte messages over ${CONNECTIONS} ` +
          `keep-alive connections to one channel, ${subscribers} SSE subscribers in a separate process. Latency = time the subscriber's ` +
          'socket read holding the record arrived − time the publisher wrote the publish (wall clock with sub-ms resolution in both processes).',
        load: `${fmt(rate)} publishes/s, ${subscribers} subscribers, ${o.warmup} s warm-up + ${o.seconds} s measured`,
        measurements: [],
        tables: [{
          title: `Latency (ms) over ${fmt(d.count)} deliveries`,
          head: ['percentile', 'ms'],
          rows: [row('min', d.min), row('p50', d.p50), row('p90', d.p90), row('p99', d.p99), row('p99.9', d.p999), row('max', d.max)],
        }],
        headlines: [
          { name: 'p50 latency', value: ms(d.p50), unit: 'ms' },
          { name: 'p99 latency', value: ms(d.p99), unit: 'ms' },
          { name: 'p99.9 latency', value: ms(d.p999), unit: 'ms' },
          { name: 'achieved publish rate', value: achieved, unit: '/s' },
        ],
        ratios: {},
        checks,
        notes,
        details: {
          subscribers, rate, achieved, latencyMs: Object.fromEntries(Object.entries(d).map(([k, v]) => [k, k === 'count' ? v : ms(v)])),
          gatewayCpuPercent: Math.round(((b.cpu - a.cpu) / dt) * 100), publisherMaxLagMs: published.maxLagMs,
        },
      }
    } finally {
      await subs.close()
    }
  } finally {
    await gw.stop()
  }
}
