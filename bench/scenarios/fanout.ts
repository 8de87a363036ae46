/**
 * Fanout: one channel, N event-stream subscribers held by a separate subscriber process, and P
 * publishing keep-alive connections (one run per P, default 1 and 20), each publishing the next
 * sequence number as soon as the previous one is acknowledged, for `seconds` after `warmup`.
 * Reports deliveries/s (messages received, summed over subscribers, per second) and publishes/s.
 * After the publishers stop it waits until every subscriber has every acknowledged message, and
 * fails if any subscriber lost, duplicated or reordered one. With --redis every run is repeated
 * against a Redis cluster: publishers on node A, subscribers on node B. One run: lib/fanout-run.ts.
 *
 * Publishers are flow-controlled (flow-control.ts): at most `window` (default 500) messages ahead
 * of the slowest subscriber, in both backends. On one node the gateway's shared event loop holds
 * publishers back by itself; across nodes nothing does, and unbounded publishing (--window 0)
 * outruns node B's fanout until it cuts every stream as too slow (80020).
 */
import { fmt } from '../lib/delivery-checks'
import { backendsOf } from '../lib/deployment'
import { FANOUT_HEAD, FANOUT_NOTE, fanoutMessageBytes, fanoutRow, runFanout, type FanoutRun } from '../lib/fanout-run'
import type { Check, Headline, RunOptions, ScenarioResult, Series } from '../lib/scenario'

const TARGET_DELIVERIES = 1_500_000
const TARGET_PUBLISHERS = 20
const WINDOW = 500

export async function fanoutScenario(o: RunOptions): Promise<ScenarioResult> {
  const subscribers = o.subscribers ?? (o.short ? 100 : 1000)
  const publisherCounts = o.publishers ?? [1, TARGET_PUBLISHERS]
  const window = o.window ?? WINDOW
  const runs: FanoutRun[] = []
  const checks: Check[] = []
  const notes: string[] = []
  const series: Series[] = []

  for (const P of publisherCounts) {
    for (const backend of backendsOf(o)) {
      const label = `${P} publisher${P === 1 ? '' : 's'}${o.redis ? `, ${backend}` : ''}`
      console.log(`fanout: ${fmt(subscribers)} subscribers, ${label}, ${o.warmup} s warm-up + ${o.seconds} s …`)
      const r = await runFanout(o, {
        backend,
        transport: 'sse',
        publishers: P,
        subscribers,
        window,
        label,
        name: `p${P}-${backend}`,
      })
      if (r.run) runs.push(r.run)
      checks.push(...r.checks)
      notes.push(...r.notes)
      series.push(...r.series)
    }
  }

  const headlines: Headline[] = runs.map((r) => ({
    name: `deliveries/s with ${r.publishers} publisher${r.publishers === 1 ? '' : 's'} (${r.backend})`,
    value: r.deliveriesPerSec,
    unit: '/s',
    ...(r.publishers === TARGET_PUBLISHERS && r.backend === 'memory'
      ? { target: `≥ ${fmt(TARGET_DELIVERIES)}`, met: r.deliveriesPerSec >= TARGET_DELIVERIES }
      : {}),
  }))
  return {
    scenario: 'fanout',
    description:
      `Event-stream fanout: one channel, ${fmt(subscribers)} SSE subscribers in a separate process, publishers on keep-alive ` +
      `connections each sending its next ${fanoutMessageBytes}-byte message when the previous one is acknowledged. Deliveries/s = messages ` +
      'received summed over subscribers per second of the measured window.' +
      (o.redis
        ? ' Each run is repeated against Redis (own redis-server, two gateway nodes): publishers on node A, subscribers on node B; gateway CPU is both nodes plus redis-server.'
        : ''),
    load:
      `${fmt(subscribers)} subscribers; ${publisherCounts.join(' and ')} publishing connection(s), pipeline 1, ` +
      `${window > 0 ? `at most ${fmt(window)} messages ahead of the slowest subscriber` : 'no flow control'}; ${o.warmup} s warm-up + ${o.seconds} s measured per run` +
      `${o.sseBufferBytes ? `; SSE_BUFFER_BYTES=${o.sseBufferBytes}` : ''}`,
    measurements: [],
    tables: [{ title: 'Runs', head: FANOUT_HEAD, rows: runs.map((r) => fanoutRow(r, window)) }],
    headlines,
    ratios: {},
    checks,
    notes: [...notes, FANOUT_NOTE],
    details: { subscribers, runs },
    charts: [
      {
        file: 'throughput.svg',
        title: 'Deliveries per second over each run (warm-up included)',
        kind: 'line',
        xLabel: 'seconds',
        yLabel: 'deliveries/s',
        series,
      },
    ],
  }
}
