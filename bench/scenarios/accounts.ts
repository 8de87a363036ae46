/**
 * Accounts (rate-limit load test): K accounts (default 50, see account-fixtures.ts for how they
 * are made) on one gateway node with RATE_LIMITS=on, each publishing to its own channel on its
 * own keep-alive connection, paced precisely (publisher.ts: each account's publishes on a fixed
 * schedule, `batch` messages per publish; at the limit, a lane catches up at most half a burst
 * after a stall and skips older slots), with one SSE subscriber per account channel counting
 * deliveries (exactly once, in order).
 *
 *   1. at the limit (LIMIT_MESSAGES_PER_SECOND, 2,000/s): every publish must be admitted (zero
 *      429) and delivered; reports p99 publish latency and p99 publish-to-SSE delivery latency
 *      (target p99 delivery ≤ 10 ms, reported, not asserted);
 *   2. at 110% of the limit (fresh gateway, full buckets): per account the admitted messages must
 *      equal burst + limit × publishing window (the token bucket; RATE_LIMIT_BURST_SECONDS × limit
 *      is the burst) within 1%, everything else refused whole with 429, and every admitted message
 *      delivered. A bucket starts full, so at 110% refusals start only after burst ÷ (10% of the
 *      limit) seconds: 10 s with the default 1 s burst. Short mode uses a 0.25 s burst (2.5 s).
 */
import { accountFixture, prepareAccounts, type AccountFixture } from '../lib/account-fixtures'
import { fmt } from '../lib/delivery-checks'
import { ACCOUNT_MESSAGE_BYTES as MESSAGE_BYTES, runPacedAccounts, type Phase } from '../lib/paced-accounts'
import type { Distribution } from '../lib/percentiles'
import type { Chart, Check, Headline, RunOptions, ScenarioResult, Series } from '../lib/scenario'

/** The gateway's default messages limit per account per second (LIMIT_MESSAGES_PER_SECOND). */
const LIMIT = 2000
const OVER = 1.1
const TARGET_DELIVERY_P99_MS = 10
const SHORT_BURST_SECONDS = 0.25
/** Admitted at 110% may differ from burst + limit × window by this share (clock granularity, a batch left in the bucket). */
const TOLERANCE = 0.01

const ms = (us: number) => us / 1000
const inMs = (d: Distribution) => Object.fromEntries(Object.entries(d).map(([k, v]) => [k, k === 'count' ? v : ms(v)]))
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)

export async function accountsScenario(o: RunOptions): Promise<ScenarioResult> {
  const k = o.accounts ?? (o.short ? 5 : 50)
  const batch = o.batch ?? 10
  const limit = LIMIT
  const rate = o.rate ?? limit
  const burstSeconds = o.short ? SHORT_BURST_SECONDS : 1
  const burst = limit * burstSeconds
  // at the limit, a lane catches up at most half a burst after a stall (of this machine, which the
  // generators share): catching up on everything at once is a burst the limit rightly refuses
  const catchUpMs = (burstSeconds * 1000) / 2
  // publishing lasts `seconds`; its first `warmup` seconds are left out of the latency percentiles
  const publishSeconds = o.seconds
  const warmup = Math.min(o.warmup, o.seconds / 2)
  const checks: Check[] = []
  const notes: string[] = []
  const series: Series[] = []
  const phases: Phase[] = []
  if (o.redis) notes.push('--redis is not used by this scenario: it runs on one node (memory backend)')
  // an account has one publish in flight and the pacing timer ticks every millisecond
  if ((rate * OVER) / batch > 500)
    throw new Error(
      `--batch ${batch} is too small for ${fmt(rate * OVER)} messages/s per account: at most 500 publishes/s per account keep the schedule; use --batch ${Math.ceil((rate * OVER) / 500)} or more`,
    )

  console.log(`accounts: preparing ${k} accounts …`)
  const data = await prepareAccounts(k, o.outDir)
  try {
    for (const [phaseName, phaseRate] of [
      ['at the limit', rate],
      [`at ${Math.round(OVER * 100)}% of the limit`, rate * OVER],
    ] as const) {
      const label = `accounts ${phaseName}`
      const first = phases.length === 0
      console.log(
        `${label}: ${k} accounts × ${fmt(phaseRate)} messages/s (${batch} per publish) for ${publishSeconds} s ` +
          `(first ${warmup} s not in the latency percentiles), limit ${fmt(limit)}/s, burst ${fmt(burst)} …`,
      )
      const r = await runPacedAccounts(
        o,
        data,
        {
          label,
          name: String(phases.length + 1),
          transport: 'http',
          rate: phaseRate,
          batch,
          limit,
          burstSeconds,
          maxCatchUpMs: first ? catchUpMs : undefined,
          publishSeconds,
          warmup,
          seriesSuffix: first ? '' : ` (${Math.round(OVER * 100)}%)`,
        },
        first ? async (gw) => [await limitsCheck(gw.base, data.accounts, limit)] : undefined,
      )
      const { phase } = r
      const { result, expected, windows, sent: sentMsgs } = phase
      phase.name = phaseName
      phases.push(phase)
      checks.push(...r.checks)
      notes.push(...r.notes)
      series.push(...r.series)
      if (first) {
        checks.push({
          name: `${label}: zero 429 (every message admitted)`,
          ok: result.refused === 0,
          detail: `${fmt(result.messages)} messages admitted, ${fmt(sum(result.refusedByLane))} refused in ${fmt(result.refused)} publishes answered 429`,
        })
        continue
      }
      const off = result.acked.map((n, i) => n - expected[i]!)
      const worst = off.reduce((w, d, i) => (Math.abs(d) > Math.abs(w.d) ? { d, i } : w), { d: 0, i: 0 })
      // A stall of the machine while a bucket is nearly full wastes what it would have refilled
      // beyond the burst (a publisher held back by unanswered publishes falls behind its schedule
      // by as long): fewer may be admitted, by at most the limit × the publisher's largest lag.
      const stalled = limit * (phase.maxLagMs / 1000)
      const within = off.every((d, i) => {
        const tol = Math.max(TOLERANCE * expected[i]!, 2 * batch)
        return d <= tol && d >= -(tol + stalled)
      })
      checks.push({
        name: `${label}: admitted = burst + limit × window per account (±${TOLERANCE * 100}%, less what stalls wasted)`,
        ok: within,
        detail:
          `admitted ${fmt(result.messages)} = ${fmt(result.messages / k)} per account on average; expected ${fmt(sum(expected))} ` +
          `(per account ${fmt(burst)} + ${fmt(limit)} × ${windowText(windows)} s); worst account ${worst.i}: ${worst.d >= 0 ? '+' : ''}${fmt(worst.d)} ` +
          `(${((worst.d / expected[worst.i]!) * 100).toFixed(2)}%); the publisher's largest lag ${phase.maxLagMs.toFixed(1)} ms ` +
          `allows ${fmt(Math.round(stalled))} fewer`,
      })
      const refusedMsgs = sum(result.refusedByLane)
      // a bucket starts full: refusals begin only once the excess over the limit has used up the burst
      const refusalsDue = sentMsgs.map((n, i) => n - expected[i]! > 2 * batch)
      if (!refusalsDue.some(Boolean)) {
        notes.push(
          `${label}: the burst (${fmt(burst)}) outlasts ${publishSeconds} s at ${Math.round(OVER * 100)}%: the excess of ${fmt(phaseRate - limit)}/s uses it up only after ` +
            `${(burst / (phaseRate - limit)).toFixed(1)} s, so no refusals were due; run longer (--seconds) to see them`,
        )
      }
      checks.push({
        name: `${label}: the rest refused with 429`,
        ok:
          refusedMsgs === sum(sentMsgs) - result.messages &&
          result.refusedByLane.every((n, i) => n > 0 === refusalsDue[i]),
        detail:
          `${fmt(refusedMsgs)} messages refused in ${fmt(result.refused)} publishes answered 429 (${fmt(Math.min(...result.refusedByLane))} to ` +
          `${fmt(Math.max(...result.refusedByLane))} per account), of ${fmt(sum(sentMsgs))} sent`,
      })
    }
  } finally {
    data.remove()
  }

  const [at, over] = phases as [Phase, Phase | undefined]
  const headlines: Headline[] = [
    { name: 'p99 publish latency at the limit', value: ms(at.publish.p99), unit: 'ms' },
    {
      name: 'p99 publish-to-SSE delivery latency at the limit',
      value: ms(at.delivery.p99),
      unit: 'ms',
      target: `≤ ${TARGET_DELIVERY_P99_MS} ms`,
      met: ms(at.delivery.p99) <= TARGET_DELIVERY_P99_MS,
    },
    {
      name: 'messages admitted at the limit (all accounts)',
      value: at.result.messages,
      unit: `of ${fmt(at.result.messages + sum(at.result.refusedByLane))} sent`,
    },
  ]
  if (over) {
    headlines.push(
      {
        name: `messages admitted at ${Math.round(OVER * 100)}% (all accounts)`,
        value: over.result.messages,
        unit: `expected ${fmt(sum(over.expected))} = ${k} × (${fmt(burst)} burst + ${fmt(limit)}/s × ${windowText(over.windows)} s)`,
      },
      {
        name: `messages refused with 429 at ${Math.round(OVER * 100)}%`,
        value: sum(over.result.refusedByLane),
        unit: 'messages',
      },
    )
  }
  const PCT = [
    ['p50', 'p50'],
    ['p90', 'p90'],
    ['p99', 'p99'],
    ['p99.9', 'p999'],
    ['max', 'max'],
  ] as const
  const charts: Chart[] = [
    {
      file: 'throughput.svg',
      title: `Messages per second, all ${k} accounts (admitted, refused, delivered)`,
      kind: 'line',
      xLabel: 'seconds',
      yLabel: 'messages/s',
      series,
    },
    {
      file: 'latency.svg',
      title: 'Latency percentiles (ms) at the limit and at 110%',
      kind: 'bar',
      yLabel: 'ms',
      categories: PCT.slice(0, 4).map(([n]) => n),
      groups: phases.flatMap((p) => [
        { name: `publish, ${p.name}`, values: PCT.slice(0, 4).map(([, q]) => ms(p.publish[q])) },
        { name: `delivery, ${p.name}`, values: PCT.slice(0, 4).map(([, q]) => ms(p.delivery[q])) },
      ]),
    },
  ]
  return {
    scenario: 'accounts',
    description:
      `Rate limits under load: ${k} accounts on one gateway node (RATE_LIMITS=on, ${fmt(limit)} messages/s per account, burst ${fmt(burst)}), ` +
      `each publishing ${batch}-message publishes of ${MESSAGE_BYTES}-byte messages on its own connection, paced to a schedule, to its own channel ` +
      'with one SSE subscriber. First at exactly the limit (all must be admitted), then at 110% (admitted must match the token bucket, the rest 429).',
    load:
      `${k} accounts; ${publishSeconds} s of publishing per phase (the first ${warmup} s excluded from the latency percentiles); ` +
      `${fmt(rate)} and ${fmt(rate * OVER)} messages/s per account = ${fmt(k * rate)} and ${fmt(k * rate * OVER)} messages/s in all`,
    measurements: [],
    tables: [
      {
        title: 'Phases',
        head: [
          'phase',
          'msgs/s per account',
          'sent',
          'admitted',
          'refused (429)',
          'expected admitted',
          'publish p50 / p99 ms',
          'delivery p50 / p99 / max ms',
          'CPU gateway / publisher / subscriber',
          'max schedule lag',
        ],
        rows: phases.map((p) => {
          const sent = p.result.messages + sum(p.result.refusedByLane)
          return [
            p.name,
            fmt(p.rate),
            fmt(sent),
            fmt(p.result.messages),
            fmt(sum(p.result.refusedByLane)),
            fmt(sum(p.expected)),
            `${ms(p.publish.p50).toFixed(2)} / ${ms(p.publish.p99).toFixed(2)}`,
            `${ms(p.delivery.p50).toFixed(2)} / ${ms(p.delivery.p99).toFixed(2)} / ${ms(p.delivery.max).toFixed(1)}`,
            `${p.cpu.gateway}% / ${p.cpu.publisher}% / ${p.cpu.subscriber}%`,
            `${p.maxLagMs.toFixed(1)} ms`,
          ]
        }),
      },
    ],
    headlines,
    ratios: {},
    checks,
    notes,
    charts,
    details: {
      accounts: k,
      limit,
      burst,
      burstSeconds,
      batch,
      publishSeconds,
      phases: phases.map((p) => ({
        name: p.name,
        rate: p.rate,
        publishMs: inMs(p.publish),
        deliveryMs: inMs(p.delivery),
        admittedByAccount: p.result.acked,
        refusedByAccount: p.result.refusedByLane,
        expectedByAccount: p.expected.map(Math.round),
        windowSeconds: p.windows,
        statuses: p.result.statuses,
        maxLagMs: p.maxLagMs,
        cpuPercent: p.cpu,
      })),
    },
  }
}

const windowText = (w: number[]) => {
  const lo = Math.min(...w)
  const hi = Math.max(...w)
  return hi - lo < 0.0005 ? lo.toFixed(3) : `${lo.toFixed(3)}…${hi.toFixed(3)}`
}

/** Every account is its own: GET /v1/accounts/{id}/limits with its access token shows the messages limit in force. */
async function limitsCheck(base: string, accounts: AccountFixture[], limit: number): Promise<Check> {
  const seen = await Promise.all(
    accounts.map(async (a) => {
      const res = await fetch(`${base}/v1/accounts/${a.accountId}/limits`, {
        headers: { Authorization: `Bearer ${a.token}` },
      })
      if (res.status !== 200) return `${a.accountId}: ${res.status} ${(await res.text()).slice(0, 120)}`
      const body = (await res.json()) as { messages?: { effective?: number } }
      return body.messages?.effective === limit ? '' : `${a.accountId}: messages limit ${JSON.stringify(body.messages)}`
    }),
  )
  const bad = seen.filter(Boolean)
  return {
    name: 'accounts: every account exists on its own with the messages limit in force',
    ok: bad.length === 0,
    detail:
      `${accounts.length - bad.length} of ${accounts.length} accounts (${accountFixture(0).accountId} …) answer GET /v1/accounts/{id}/limits with ` +
      `messages ${fmt(limit)}/s${bad.length ? `; e.g. ${bad.slice(0, 3).join(' | ')}` : ''}`,
  }
}
