/**
 * Append rollup (issue 43, AI Transport): S streams (`--channels`, default 1,000), each one
 * channel of a `mutableMessages` namespace with one realtime subscriber (msgpack), and one
 * message per stream to which a publisher appends tokens at R appends a second (`--rate`,
 * default 150, an LLM's output rate), paced every 10 ms over 50 realtime connections. Run with
 * the default rollup window (40 ms) and with `appendRollupWindow=0` (every append delivered),
 * alternated on a fresh gateway each (`--rounds`, default 2). Reports deliveries per stream per
 * second, the gateway's CPU (per append published and in cores), and their ratios; the first
 * stream's subscriber must end with exactly the text published.
 */
import { alternate, mean } from '../lib/alternation'
import { fmt } from '../lib/delivery-checks'
import type { Check, Headline, RunOptions, ScenarioResult } from '../lib/scenario'
import { streamRun, type StreamRun } from '../lib/stream-run'

interface Run extends StreamRun {
  rollup: boolean
  round: number
}

export async function appendRollupScenario(o: RunOptions): Promise<ScenarioResult> {
  const streams = o.channels ?? (o.short ? 50 : 1000)
  const rate = o.rate ?? 150
  const rounds = o.rounds ?? (o.short ? 1 : 2)
  const seconds = o.seconds
  const channels = Array.from({ length: streams }, (_, i) => `ai:stream-${i}`)
  const runs: Run[] = []
  const checks: Check[] = []
  for (const { round, variant } of alternate(true, false, rounds)) {
    const label = `rollup ${variant ? 'on (40 ms)' : 'off (appendRollupWindow=0)'}, round ${round}`
    console.log(`append-rollup: ${fmt(streams)} streams at ${rate} appends/s, ${label} …`)
    const r = await streamRun({
      logDir: o.outDir,
      name: `${variant ? 'on' : 'off'}-r${round}`,
      profile: o.profile,
      rule: { id: 'ai', mutableMessages: true },
      channels,
      subscribers: streams,
      params: variant ? undefined : { appendRollupWindow: '0' },
      publisherConnections: Math.min(50, streams),
      publish: { mode: 'appends', rate },
      warmup: o.warmup,
      seconds,
      complete: (sub, pub) => Object.values(sub.texts)[0] === pub.text,
    })
    checks.push({
      name: `${label}: the first stream's subscriber holds exactly the text published; no NACK`,
      ok: r.complete && r.pub.faults.length === 0 && r.sub.faults.length === 0,
      detail: r.complete
        ? `${fmt(r.pub.text.length)} characters`
        : `got ${Object.values(r.sub.texts)[0]?.length ?? 0} of ${r.pub.text.length} characters; ${[...r.pub.faults, ...r.sub.faults].join('; ')}`,
    })
    runs.push({ ...r, rollup: variant, round })
  }

  const of = (on: boolean) => runs.filter((r) => r.rollup === on)
  const perStream = (on: boolean) => mean(of(on).map((r) => r.messagesPerSecond / streams))
  const appendsPerStream = (on: boolean) => mean(of(on).map((r) => r.publishedPerSecond / streams))
  const cpuPerAppend = (on: boolean) => mean(of(on).map((r) => (r.cpuCores * 1e6) / r.publishedPerSecond))
  const cores = (on: boolean) => mean(of(on).map((r) => r.cpuCores))
  const delivered = perStream(true)
  const headlines: Headline[] = [
    {
      name: 'deliveries per stream per second, rollup on (40 ms)',
      value: delivered,
      unit: '/s',
      target: '≤ ~25',
      met: delivered <= 26,
    },
    { name: 'deliveries per stream per second, rollup off', value: perStream(false), unit: '/s' },
    { name: 'appends published per stream per second (on / off)', value: appendsPerStream(true), unit: '/s' },
    { name: 'gateway CPU per append published, rollup on', value: cpuPerAppend(true), unit: 'µs' },
    { name: 'gateway CPU per append published, rollup off', value: cpuPerAppend(false), unit: 'µs' },
    { name: 'gateway CPU, rollup on', value: cores(true), unit: 'cores' },
    { name: 'gateway CPU, rollup off', value: cores(false), unit: 'cores' },
  ]
  const ratios = {
    'deliveries per stream, rollup on ÷ off': perStream(true) / perStream(false),
    'gateway CPU per append, rollup on ÷ off': cpuPerAppend(true) / cpuPerAppend(false),
    'subscriber bytes, rollup on ÷ off':
      mean(of(true).map((r) => r.bytesPerSecond)) / mean(of(false).map((r) => r.bytesPerSecond)),
  }
  return {
    scenario: 'append-rollup',
    description:
      `Append rollup (appendRollupWindow): ${fmt(streams)} channels of a mutableMessages namespace, one realtime subscriber each ` +
      `(msgpack, a separate process), one message per channel appended to at ${rate} appends/s by a paced realtime publisher ` +
      `(50 connections, a separate process); the default 40 ms window against appendRollupWindow=0, a fresh gateway per run, alternated. ` +
      `Deliveries = messages in the MESSAGE frames the subscribers received, over ${seconds} s after ${o.warmup} s of warm-up; ` +
      'CPU = the gateway process over the same window.',
    load: `${fmt(streams)} streams × ${rate} appends/s; ${rounds} round(s) of each`,
    measurements: [],
    tables: [
      {
        title: 'Runs (in the order they ran)',
        head: [
          'rollup',
          'round',
          'appends/s (all streams)',
          'skipped',
          'deliveries / stream / s',
          'frames / s',
          'gateway cores',
          'CPU µs / append',
        ],
        rows: runs.map((r) => [
          r.rollup ? 'on' : 'off',
          String(r.round),
          fmt(r.publishedPerSecond),
          fmt(r.pub.skipped),
          (r.messagesPerSecond / streams).toFixed(1),
          fmt(r.framesPerSecond),
          r.cpuCores.toFixed(2),
          ((r.cpuCores * 1e6) / r.publishedPerSecond).toFixed(1),
        ]),
      },
    ],
    headlines,
    ratios,
    checks,
    details: { streams, rate, rounds, seconds, runs: runs.map(({ sub: _s, pub: _p, ...r }) => r) },
  }
}
