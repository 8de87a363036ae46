/**
 * Conflation (issue 43): one channel to N realtime subscribers (`--subscribers`, default 1,000,
 * msgpack), a publisher sending K keys (4) at 10 messages per conflation interval each (interval
 * 100 ms: 100 messages a second per key, `--rate` overrides), paced every 10 ms. Run on a
 * namespace with `conflationEnabled` (interval 100 ms, key `#{message.name}`) and on one without
 * a rule, alternated on a fresh gateway each (`--rounds`, default 2). Reports deliveries per
 * subscriber per second, the gateway's CPU per message published and in cores, and their ratios;
 * the first subscriber must end with the latest message of every key.
 */
import { alternate, mean } from '../lib/alternation'
import { fmt } from '../lib/delivery-checks'
import type { Check, Headline, RunOptions, ScenarioResult } from '../lib/scenario'
import { streamRun, type StreamRun } from '../lib/stream-run'

interface Run extends StreamRun {
  conflated: boolean
  round: number
}

const INTERVAL_MS = 100
const KEYS = 4

export async function conflationScenario(o: RunOptions): Promise<ScenarioResult> {
  const subscribers = o.subscribers ?? (o.short ? 100 : 1000)
  const rate = o.rate ?? KEYS * 10 * (1000 / INTERVAL_MS)
  const rounds = o.rounds ?? (o.short ? 1 : 2)
  const seconds = o.seconds
  const runs: Run[] = []
  const checks: Check[] = []
  for (const { round, variant } of alternate(true, false, rounds)) {
    const label = `conflation ${variant ? 'on' : 'off'}, round ${round}`
    console.log(`conflation: ${fmt(subscribers)} subscribers, ${rate} messages/s over ${KEYS} keys, ${label} …`)
    const ns = variant ? 'conflated' : 'plain'
    const r = await streamRun({
      logDir: o.outDir,
      name: `${variant ? 'on' : 'off'}-r${round}`,
      profile: o.profile,
      rule: variant
        ? { id: ns, conflationEnabled: true, conflationInterval: INTERVAL_MS, conflationKey: '#{message.name}' }
        : { id: ns },
      channels: [`${ns}:prices`],
      subscribers,
      publisherConnections: 1,
      publish: { mode: 'messages', rate, keys: KEYS },
      warmup: o.warmup,
      seconds,
      complete: (sub, pub) => Object.entries(pub.latest).every(([k, v]) => sub.latest[k] === v),
    })
    checks.push({
      name: `${label}: the first subscriber holds the latest message of every key; no NACK`,
      ok: r.complete && r.pub.faults.length === 0 && r.sub.faults.length === 0,
      detail: r.complete
        ? `${KEYS} keys`
        : `latest ${JSON.stringify(r.sub.latest)} against ${JSON.stringify(r.pub.latest)}; ${[...r.pub.faults, ...r.sub.faults].join('; ')}`,
    })
    runs.push({ ...r, conflated: variant, round })
  }

  const of = (on: boolean) => runs.filter((r) => r.conflated === on)
  const perSubscriber = (on: boolean) => mean(of(on).map((r) => r.messagesPerSecond / subscribers))
  const cpuPerPublish = (on: boolean) => mean(of(on).map((r) => (r.cpuCores * 1e6) / r.publishedPerSecond))
  const cores = (on: boolean) => mean(of(on).map((r) => r.cpuCores))
  const expected = KEYS * (1000 / INTERVAL_MS)
  const headlines: Headline[] = [
    {
      name: 'deliveries per subscriber per second, conflation on',
      value: perSubscriber(true),
      unit: '/s',
      target: `≤ ${expected} (${KEYS} keys × 1 per ${INTERVAL_MS} ms)`,
      met: perSubscriber(true) <= expected * 1.05,
    },
    { name: 'deliveries per subscriber per second, conflation off', value: perSubscriber(false), unit: '/s' },
    { name: 'gateway CPU per message published, conflation on', value: cpuPerPublish(true), unit: 'µs' },
    { name: 'gateway CPU per message published, conflation off', value: cpuPerPublish(false), unit: 'µs' },
    { name: 'gateway CPU, conflation on', value: cores(true), unit: 'cores' },
    { name: 'gateway CPU, conflation off', value: cores(false), unit: 'cores' },
  ]
  return {
    scenario: 'conflation',
    description:
      `Conflation (namespace rule, interval ${INTERVAL_MS} ms, key #{message.name}): one channel, ${fmt(subscribers)} realtime ` +
      `subscribers (msgpack, a separate process), ${rate} messages/s over ${KEYS} keys (10 per key per interval) from a paced ` +
      'realtime publisher; against a namespace without the rule, a fresh gateway per run, alternated. Deliveries = messages in the ' +
      `MESSAGE frames the subscribers received, over ${seconds} s after ${o.warmup} s of warm-up; CPU = the gateway process over the same window.`,
    load: `${fmt(subscribers)} subscribers × ${rate} messages/s; ${rounds} round(s) of each`,
    measurements: [],
    tables: [
      {
        title: 'Runs (in the order they ran)',
        head: [
          'conflation',
          'round',
          'published/s',
          'deliveries / subscriber / s',
          'frames / s',
          'gateway cores',
          'CPU µs / publish',
        ],
        rows: runs.map((r) => [
          r.conflated ? 'on' : 'off',
          String(r.round),
          fmt(r.publishedPerSecond),
          (r.messagesPerSecond / subscribers).toFixed(1),
          fmt(r.framesPerSecond),
          r.cpuCores.toFixed(2),
          ((r.cpuCores * 1e6) / r.publishedPerSecond).toFixed(1),
        ]),
      },
    ],
    headlines,
    ratios: {
      'deliveries per subscriber, conflation on ÷ off': perSubscriber(true) / perSubscriber(false),
      'gateway CPU, conflation on ÷ off': cores(true) / cores(false),
      'subscriber bytes, conflation on ÷ off':
        mean(of(true).map((r) => r.bytesPerSecond)) / mean(of(false).map((r) => r.bytesPerSecond)),
    },
    checks,
    details: { subscribers, rate, rounds, seconds, runs: runs.map(({ sub: _s, pub: _p, ...r }) => r) },
  }
}
