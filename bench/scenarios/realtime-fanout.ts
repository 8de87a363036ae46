/**
 * Realtime fan-out against event-stream fan-out, in the same run: one channel, N subscribers
 * (default 1,000) in a separate process, P publishing HTTP connections (default 20) as in the
 * fanout scenario; the subscribers are realtime connections (each attached to the channel,
 * reading MESSAGE frames: lib/realtime-client.ts) in one run and event streams in the other, on a
 * fresh gateway each, alternated over `--rounds` (default 2: SSE, realtime, realtime, SSE).
 * Reports deliveries/s of both and their ratio (target: realtime ≥ event streams); every
 * subscriber must get every acknowledged message once and in order. With --redis the same runs
 * follow on a Redis cluster (publishers on node A, subscribers on node B).
 */
import { alternate, mean, range } from '../lib/alternation'
import { fmt } from '../lib/delivery-checks'
import { backendsOf } from '../lib/deployment'
import { FANOUT_HEAD, FANOUT_NOTE, fanoutMessageBytes, fanoutRow, runFanout, type FanoutRun } from '../lib/fanout-run'
import type { Check, Headline, RunOptions, ScenarioResult, Series } from '../lib/scenario'
import type { Transport } from '../lib/sse-subscriber-client'

const WINDOW = 500
const PUBLISHERS = 20

export async function realtimeFanoutScenario(o: RunOptions): Promise<ScenarioResult> {
  const subscribers = o.subscribers ?? (o.short ? 100 : 1000)
  const publisherCounts = o.publishers ?? [PUBLISHERS]
  const window = o.window ?? WINDOW
  const rounds = o.rounds ?? (o.short ? 1 : 2)
  const runs: Array<FanoutRun & { round: number }> = []
  const checks: Check[] = []
  const notes: string[] = []
  const series: Series[] = []

  for (const P of publisherCounts)
    for (const backend of backendsOf(o))
      for (const { round, variant } of alternate<Transport>('sse', 'realtime', rounds)) {
        const label = `${variant === 'sse' ? 'event streams' : 'realtime'}, ${P} publisher${P === 1 ? '' : 's'}, ${backend}, round ${round}`
        console.log(
          `realtime-fanout: ${fmt(subscribers)} subscribers, ${label}, ${o.warmup} s warm-up + ${o.seconds} s …`,
        )
        const r = await runFanout(o, {
          backend,
          transport: variant,
          publishers: P,
          subscribers,
          window,
          label,
          name: `${variant}-p${P}-${backend}-r${round}`,
        })
        if (r.run) runs.push({ ...r.run, round })
        checks.push(...r.checks)
        notes.push(...r.notes)
        series.push(...r.series.map((s) => ({ ...s, dashed: variant === 'sse' })))
      }

  const headlines: Headline[] = []
  const ratios: Record<string, number> = {}
  for (const P of publisherCounts)
    for (const backend of backendsOf(o)) {
      const of = (t: Transport) =>
        runs
          .filter((r) => r.publishers === P && r.backend === backend && r.transport === t)
          .map((r) => r.deliveriesPerSec)
      const [sse, rt] = [of('sse'), of('realtime')]
      if (!sse.length || !rt.length) continue
      const ratio = mean(rt) / mean(sse)
      const where = `${P} publisher${P === 1 ? '' : 's'}, ${backend}`
      headlines.push(
        {
          name: `realtime deliveries/s (${where}; ${range(rt, fmt)} over ${rt.length} run(s))`,
          value: mean(rt),
          unit: '/s',
        },
        { name: `event-stream deliveries/s (${where}; ${range(sse, fmt)})`, value: mean(sse), unit: '/s' },
        { name: `realtime ÷ event streams (${where})`, value: ratio, unit: '', target: '≥ 1', met: ratio >= 1 },
      )
      ratios[`realtime ÷ event-stream deliveries/s (${where})`] = ratio
    }
  return {
    scenario: 'realtime-fanout',
    description:
      `Realtime fan-out compared with event-stream fan-out in the same run: one channel, ${fmt(subscribers)} subscribers in a separate process ` +
      '(realtime connections attached to the channel, or SSE streams), publishers on keep-alive HTTP connections each sending its next ' +
      `${fanoutMessageBytes}-byte message when the previous one is acknowledged; a fresh gateway per run, the two kinds alternated. ` +
      'Deliveries/s = messages received summed over subscribers per second of the measured window.' +
      (o.redis ? ' Repeated on Redis (two gateway nodes): publishers on node A, subscribers on node B.' : ''),
    load:
      `${fmt(subscribers)} subscribers; ${publisherCounts.join(' and ')} publishing connection(s), pipeline 1, ` +
      `${window > 0 ? `at most ${fmt(window)} messages ahead of the slowest subscriber` : 'no flow control'}; ` +
      `${rounds} round(s) of each kind, ${o.warmup} s warm-up + ${o.seconds} s measured per run`,
    measurements: [],
    tables: [
      {
        title: 'Runs (in the order they ran)',
        head: ['round', ...FANOUT_HEAD],
        rows: runs.map((r) => [String(r.round), ...fanoutRow(r, window)]),
      },
    ],
    headlines,
    ratios,
    checks,
    notes: [...notes, FANOUT_NOTE],
    details: { subscribers, rounds, runs },
    charts: [
      {
        file: 'throughput.svg',
        title: 'Deliveries per second over each run (event streams dashed)',
        kind: 'line',
        xLabel: 'seconds',
        yLabel: 'deliveries/s',
        series,
      },
    ],
  }
}
