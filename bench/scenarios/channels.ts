/**
 * Channels: many channels (default 10,000) with few subscribers each (default 2), multiplexed: one
 * event stream carries 100 channels (`channels=a,b,c…`, the gateway's SSE_MAX_CHANNELS), so 10,000
 * channels × 2 subscribers are 200 streams. The publisher spreads its publishes over every channel
 * (each channel is a lane with its own sequence, see publisher.ts) as fast as acknowledgements
 * allow. Reports publishes/s and deliveries/s, and checks that every stream got every message of
 * each of its channels exactly once and in order, and nothing of other channels. With --redis the
 * run is repeated against a Redis cluster: publishes to node A, streams on node B.
 */
import { cutNote, deliveryChecks, fmt, openedCheck, publishCheck } from '../lib/delivery-checks'
import { backendsOf, startDeployment } from '../lib/deployment'
import { startPublisher } from '../lib/publisher-client'
import type { Check, Headline, RunOptions, ScenarioResult, Series } from '../lib/scenario'
import { startSubscribers } from '../lib/sse-subscriber-client'
import { deliveryFigures, measureDeliveryWindow, type DeliveryFigures } from '../lib/measure-window'

const MESSAGE_BYTES = 100
/** Channels per event stream: the gateway's default SSE_MAX_CHANNELS. */
const PER_STREAM = 100
const name = (k: number) => `ch-${k}`

type Run = DeliveryFigures

export async function channelsScenario(o: RunOptions): Promise<ScenarioResult> {
  const channels = o.channels ?? (o.short ? 1000 : 10_000)
  const perChannel = o.subscribers ?? 2
  const groupCount = Math.ceil(channels / PER_STREAM)
  const streams = groupCount * perChannel
  const checks: Check[] = []
  const notes: string[] = []
  const runs: Run[] = []
  const series: Series[] = []

  for (const backend of backendsOf(o)) {
    const label = `channels${o.redis ? ` (${backend})` : ''}`
    console.log(
      `${label}: ${fmt(channels)} channels × ${perChannel} subscribers = ${fmt(streams)} streams of ≤ ${PER_STREAM} channels; ` +
        `${o.connections} publishing connections × pipeline ${o.pipeline}; ${o.warmup} s warm-up + ${o.seconds} s …`,
    )
    const env: Record<string, string> = o.sseBufferBytes ? { SSE_BUFFER_BYTES: String(o.sseBufferBytes) } : {}
    const d = await startDeployment(backend, {
      logDir: o.outDir,
      env,
      cpuProfile: o.profile,
      name: `gateway-${backend}`,
      fdLimit: streams + 1024,
    })
    try {
      const groups = Array.from({ length: groupCount }, (_, g) => {
        const lanes = Array.from(
          { length: Math.min(PER_STREAM, channels - g * PER_STREAM) },
          (_, i) => g * PER_STREAM + i,
        )
        return { channels: lanes.map(name), key: d.key, lanes }
      })
      const subs = await startSubscribers({
        base: d.subscribeTo.base,
        channel: '',
        key: d.key,
        count: streams,
        publishers: channels,
        groups,
        logDir: o.outDir,
        fdLimit: streams + 1024,
        cpuProfile: o.profile,
        name: `subscriber-${backend}`,
      })
      try {
        checks.push(openedCheck(label, streams, subs.opened))
        if (subs.opened.established !== streams) continue
        const pub = await startPublisher({
          base: d.publishTo.base,
          logDir: o.outDir,
          lanes: Array.from({ length: channels }, (_, k) => ({ channel: name(k), key: d.key })),
          connections: o.connections,
          pipeline: o.pipeline,
          rate: 0,
          stamps: false,
          bytes: MESSAGE_BYTES,
          cpuProfile: o.profile,
          name: `publisher-${backend}`,
        })
        const w = await measureDeliveryWindow(label, d, subs, pub, o.warmup, o.seconds)
        const published = await pub.stop()
        const settled = await subs.settle(published.acked, o.short ? 20_000 : 60_000)
        for (const s of await w.timeline.stop())
          series.push({ ...s, name: `${s.name}${o.redis ? `, ${backend}` : ''}`, dashed: backend === 'redis' })
        const run: Run = deliveryFigures(d, w, perChannel, settled.ms)
        runs.push(run)
        const idle = published.acked.filter((n) => n === 0).length
        checks.push(publishCheck(label, published))
        checks.push({
          name: `${label}: publishing reached every channel`,
          ok: idle === 0,
          detail: `${fmt(channels - idle)} of ${fmt(channels)} channels got messages (${fmt(Math.min(...published.acked))} to ${fmt(Math.max(...published.acked))} each)`,
        })
        checks.push(
          ...deliveryChecks(
            label,
            streams,
            `every message of its ${PER_STREAM} channels, ${fmt((published.published * perChannel) / streams)} on average`,
            settled,
          ),
        )
        notes.push(...cutNote(settled).map((n) => `${label}: ${n}`))
        if (run.cpu.subscribers > 90)
          notes.push(
            `${label}: the subscriber process used ${run.cpu.subscribers}% of a core: it may have been the bottleneck`,
          )
        if (run.cpu.publisher > 90)
          notes.push(
            `${label}: the publisher process used ${run.cpu.publisher}% of a core: it may have been the bottleneck`,
          )
      } finally {
        await subs.close()
      }
    } finally {
      await d.stop()
    }
  }

  const headlines: Headline[] = runs.flatMap((r) => [
    { name: `deliveries/s (${r.backend})`, value: r.deliveriesPerSec, unit: '/s' },
    { name: `publishes/s (${r.backend})`, value: r.publishesPerSec, unit: '/s' },
  ])
  return {
    scenario: 'channels',
    description:
      `Many channels, few subscribers: ${fmt(channels)} channels × ${perChannel} SSE subscribers, multiplexed ${PER_STREAM} channels per ` +
      `event stream (${fmt(streams)} streams in one subscriber process); ${MESSAGE_BYTES}-byte publishes spread round robin over every ` +
      'channel, each channel with at most one publish in flight. Deliveries/s = messages received summed over streams per second.' +
      (o.redis
        ? ' Repeated against Redis (own redis-server, two gateway nodes): publishes to node A, streams on node B.'
        : ''),
    load:
      `${fmt(channels)} channels, ${fmt(streams)} streams; ${o.connections} publishing connections × pipeline ${o.pipeline}; ` +
      `${o.warmup} s warm-up + ${o.seconds} s measured${o.redis ? ' per backend' : ''}`,
    measurements: [],
    tables: [
      {
        title: 'Runs',
        head: [
          'backend',
          'publishes/s',
          'deliveries/s',
          'kept pace',
          'drain after stop',
          'gateway CPU',
          'subscriber CPU',
          'publisher CPU',
          'gateway RSS',
        ],
        rows: runs.map((r) => [
          r.backend,
          fmt(r.publishesPerSec),
          fmt(r.deliveriesPerSec),
          `${(r.keptPace * 100).toFixed(1)}%`,
          `${fmt(r.drainMs)} ms`,
          `${r.cpu.gateway}%`,
          `${r.cpu.subscribers}%`,
          `${r.cpu.publisher}%`,
          `${r.gatewayRssMiB.toFixed(0)} MiB`,
        ]),
      },
    ],
    headlines,
    ratios: {},
    checks,
    notes,
    charts: [
      {
        file: 'throughput.svg',
        title: 'Publishes and deliveries per second (warm-up included)',
        kind: 'line',
        xLabel: 'seconds',
        yLabel: 'per second',
        series,
      },
    ],
    details: { channels, perChannel, streams, perStream: PER_STREAM, runs },
  }
}
