/**
 * Realtime publish-to-delivery latency at 50 accounts × 2,000 messages/s (100k messages/s on one
 * node), against HTTP publishing with event-stream delivery in the same run: the accounts
 * scenario's first phase (K accounts at their rate limit, RATE_LIMITS=on, `batch` messages per
 * publish paced to a schedule, one subscriber per account channel; lib/paced-accounts.ts), once
 * over the realtime protocol both ways (MESSAGE protocol messages answered by ACK; realtime
 * subscribers) and once over HTTP and event streams, on a fresh gateway each, alternated over
 * `--rounds` (default 2). Every message must be admitted (no 429 / NACK), delivered once and in
 * order. Reports p50 / p99 / p99.9 / max of delivery (target p99 ≤ 10 ms) and publish latency.
 */
import { prepareAccounts } from '../lib/account-fixtures'
import { alternate, range } from '../lib/alternation'
import { fmt } from '../lib/delivery-checks'
import { runPacedAccounts, type AccountsTransport, type Phase } from '../lib/paced-accounts'
import type { Distribution } from '../lib/percentiles'
import type { Chart, Check, Headline, RunOptions, ScenarioResult, Series } from '../lib/scenario'

const LIMIT = 2000
const TARGET_P99_MS = 10
const SHORT_BURST_SECONDS = 0.25

const ms = (us: number) => us / 1000
const inMs = (d: Distribution) => Object.fromEntries(Object.entries(d).map(([k, v]) => [k, k === 'count' ? v : ms(v)]))
const what = (t: AccountsTransport) => (t === 'realtime' ? 'realtime' : 'HTTP + event streams')

export async function realtimeLatencyScenario(o: RunOptions): Promise<ScenarioResult> {
  const k = o.accounts ?? (o.short ? 5 : 50)
  const batch = o.batch ?? 10
  const rate = o.rate ?? LIMIT
  const burstSeconds = o.short ? SHORT_BURST_SECONDS : 1
  const rounds = o.rounds ?? (o.short ? 1 : 2)
  const warmup = Math.min(o.warmup, o.seconds / 2)
  const checks: Check[] = []
  const notes: string[] = []
  const series: Series[] = []
  const runs: Array<Phase & { transport: AccountsTransport; round: number }> = []
  if (o.redis) notes.push('--redis is not used by this scenario: it runs on one node (memory backend)')
  if (rate / batch > 500)
    throw new Error(`--batch ${batch} is too small: at most 500 publishes/s per account keep the schedule`)

  console.log(`realtime-latency: preparing ${k} accounts …`)
  const data = await prepareAccounts(k, o.outDir)
  try {
    for (const { round, variant } of alternate<AccountsTransport>('http', 'realtime', rounds)) {
      const label = `${what(variant)}, round ${round}`
      console.log(
        `${label}: ${k} accounts × ${fmt(rate)} messages/s (${batch} per publish) for ${o.seconds} s (first ${warmup} s not in the percentiles) …`,
      )
      const r = await runPacedAccounts(o, data, {
        label,
        name: `${variant}-r${round}`,
        transport: variant,
        rate,
        batch,
        limit: LIMIT,
        burstSeconds,
        // as in the accounts scenario: catching up on a long stall at once is a burst the limit refuses
        maxCatchUpMs: (burstSeconds * 1000) / 2,
        publishSeconds: o.seconds,
        warmup,
        seriesSuffix: ` (${variant}, round ${round})`,
      })
      const { result } = r.phase
      runs.push({ ...r.phase, transport: variant, round })
      checks.push(...r.checks, {
        name: `${label}: every message admitted (no refusal by the rate limit)`,
        ok: result.refused === 0,
        detail: `${fmt(result.messages)} messages admitted, ${fmt(result.refused)} publishes refused`,
      })
      notes.push(...r.notes)
      series.push(...r.series.filter((s) => s.name.startsWith('delivered')))
    }
  } finally {
    data.remove()
  }

  const headlines: Headline[] = []
  const ratios: Record<string, number> = {}
  const p99 = (t: AccountsTransport) => runs.filter((r) => r.transport === t).map((r) => ms(r.delivery.p99))
  for (const t of ['realtime', 'http'] as const) {
    const of = runs.filter((r) => r.transport === t)
    if (!of.length) continue
    const worst = Math.max(...p99(t))
    headlines.push(
      {
        name: `${what(t)}: p50 delivery (${range(
          of.map((r) => ms(r.delivery.p50)),
          (x) => x.toFixed(2),
        )} ms over ${of.length} run(s))`,
        value: Math.max(...of.map((r) => ms(r.delivery.p50))),
        unit: 'ms (worst run)',
      },
      {
        name: `${what(t)}: p99 delivery (${range(p99(t), (x) => x.toFixed(2))} ms)`,
        value: worst,
        unit: 'ms (worst run)',
        ...(t === 'realtime' ? { target: `≤ ${TARGET_P99_MS} ms`, met: worst <= TARGET_P99_MS } : {}),
      },
    )
  }
  if (p99('realtime').length && p99('http').length)
    ratios['realtime p99 ÷ HTTP + event-stream p99 (worst runs)'] =
      Math.max(...p99('realtime')) / Math.max(...p99('http'))

  const PCT = [
    ['p50', 'p50'],
    ['p90', 'p90'],
    ['p99', 'p99'],
    ['p99.9', 'p999'],
  ] as const
  const charts: Chart[] = [
    {
      file: 'throughput.svg',
      title: `Messages delivered per second, all ${k} accounts`,
      kind: 'line',
      xLabel: 'seconds',
      yLabel: 'messages/s',
      series,
    },
    {
      file: 'latency.svg',
      title: 'Publish-to-delivery latency percentiles (ms) per run',
      kind: 'bar',
      yLabel: 'ms',
      categories: PCT.map(([n]) => n),
      groups: runs.map((r) => ({
        name: `${what(r.transport)}, round ${r.round}`,
        values: PCT.map(([, q]) => ms(r.delivery[q])),
      })),
    },
  ]
  return {
    scenario: 'realtime-latency',
    description:
      `Publish-to-delivery latency over the realtime protocol (publishes as MESSAGE protocol messages of ${batch} messages answered by ACK, ` +
      `realtime subscribers) compared with HTTP publishing and event-stream delivery in the same run: ${k} accounts on one gateway node ` +
      `(RATE_LIMITS=on, ${fmt(LIMIT)} messages/s each), each publishing at its limit on its own connection, paced to a schedule, to its own ` +
      'channel with one subscriber. A fresh gateway per run, the two alternated. Latency = when the subscriber process read the frame or ' +
      'record − when the publisher wrote the publish (wall clocks of the two processes, µs).',
    load: `${k} accounts × ${fmt(rate)} messages/s = ${fmt(k * rate)} messages/s; ${rounds} round(s) of each, ${o.seconds} s of publishing per run (the first ${warmup} s excluded from the percentiles)`,
    measurements: [],
    tables: [
      {
        title: 'Runs (in the order they ran)',
        head: [
          'round',
          'transport',
          'admitted',
          'refused',
          'publish p50 / p99 ms',
          'delivery p50 / p99 / p99.9 / max ms',
          'CPU gateway / publisher / subscriber',
          'max schedule lag',
        ],
        rows: runs.map((r) => [
          String(r.round),
          what(r.transport),
          fmt(r.result.messages),
          fmt(r.result.refused),
          `${ms(r.publish.p50).toFixed(2)} / ${ms(r.publish.p99).toFixed(2)}`,
          `${ms(r.delivery.p50).toFixed(2)} / ${ms(r.delivery.p99).toFixed(2)} / ${ms(r.delivery.p999).toFixed(2)} / ${ms(r.delivery.max).toFixed(1)}`,
          `${r.cpu.gateway}% / ${r.cpu.publisher}% / ${r.cpu.subscriber}%`,
          `${r.maxLagMs.toFixed(1)} ms`,
        ]),
      },
    ],
    headlines,
    ratios,
    checks,
    notes,
    charts,
    details: {
      accounts: k,
      rate,
      batch,
      rounds,
      runs: runs.map((r) => ({
        round: r.round,
        transport: r.transport,
        publishMs: inMs(r.publish),
        deliveryMs: inMs(r.delivery),
        statuses: r.result.statuses,
        maxLagMs: r.maxLagMs,
        cpuPercent: r.cpu,
      })),
    },
  }
}
