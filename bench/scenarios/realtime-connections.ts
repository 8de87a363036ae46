/**
 * Idle realtime connections against idle event streams, in the same run: K of each (default
 * 10,000; realtime connections each attached to the channel) held open on one channel of a fresh
 * gateway (lib/idle-connections.ts), one kind after the other (`--rounds` alternates more).
 * Reports the gateway's resident memory per connection of both (VmRSS after − before ÷ K; target
 * for realtime ≤ 8 KiB) and checks that all K opened, stayed open and received a final publish.
 * K is capped to the gateway's open-file limit (the run says so): on this machine the hard limit
 * is 20,000 per process, enough for 10,000 (each connection is one descriptor in the gateway and
 * one in a subscriber process).
 */
import { alternate, mean, range } from '../lib/alternation'
import { fmt } from '../lib/delivery-checks'
import { memoryRows, runIdle, type IdleRun } from '../lib/idle-connections'
import type { Check, Headline, RunOptions, ScenarioResult, Series } from '../lib/scenario'
import type { Transport } from '../lib/sse-subscriber-client'

const TARGET_BYTES = 8 * 1024
const what = (t: Transport) => (t === 'sse' ? 'event streams' : 'realtime connections')

export async function realtimeConnectionsScenario(o: RunOptions): Promise<ScenarioResult> {
  const requested = o.subscribers ?? (o.short ? 2000 : 10_000)
  const rounds = o.rounds ?? 1
  const runs: Array<IdleRun & { round: number }> = []
  const checks: Check[] = []
  const notes: string[] = []
  const series: Series[] = []
  for (const { round, variant } of alternate<Transport>('sse', 'realtime', rounds)) {
    const r = await runIdle(o, variant, requested)
    runs.push({ ...r.run, round })
    checks.push(...r.checks)
    notes.push(...r.notes)
    series.push(...r.series.filter((s) => s.name.startsWith('gateway RSS')))
  }
  const bytes = (t: Transport) => runs.filter((r) => r.transport === t).map((r) => r.bytesPerConnection)
  const rt = mean(bytes('realtime'))
  const headlines: Headline[] = [
    {
      name: `gateway memory per realtime connection (attached; ${range(bytes('realtime'), fmt)} bytes)`,
      value: rt,
      unit: 'bytes',
      target: `≤ ${fmt(TARGET_BYTES)}`,
      met: rt <= TARGET_BYTES,
    },
    {
      name: `gateway memory per event stream (${range(bytes('sse'), fmt)} bytes)`,
      value: mean(bytes('sse')),
      unit: 'bytes',
    },
    ...runs.map((r) => ({
      name: `${what(r.transport)} opened per second (round ${r.round})`,
      value: r.established / (r.openMs / 1000),
      unit: '/s',
    })),
  ]
  return {
    scenario: 'realtime-connections',
    description:
      'Idle realtime connections (WebSocket, CONNECTED and ATTACHED to one channel) compared with idle event streams on the same channel, ' +
      'each kind on a fresh gateway in the same run: resident memory of the gateway per connection (VmRSS after − before ÷ connections), ' +
      'from subscriber processes in the same machine.',
    load: `${fmt(requested)} connections of each kind requested (${runs.map((r) => `${fmt(r.attempted)} ${what(r.transport)}`).join(', ')} attempted), held ${o.seconds} s`,
    measurements: [],
    tables: runs.map((r) => ({
      title: `Gateway memory: ${what(r.transport)} (round ${r.round})`,
      head: ['moment', 'VmRSS', 'bytes per connection'],
      rows: memoryRows(r, o.seconds),
    })),
    headlines,
    ratios: { 'realtime ÷ event-stream bytes per connection': rt / mean(bytes('sse')) },
    checks,
    notes,
    charts: [
      {
        file: 'memory.svg',
        title: 'Gateway memory per connection (bytes, VmRSS growth ÷ connections)',
        kind: 'bar',
        yLabel: 'bytes per connection',
        categories: runs.map((r) => `${what(r.transport)} (${r.round})`).concat('realtime target'),
        groups: [{ name: '', values: runs.map((r) => r.bytesPerConnection).concat(TARGET_BYTES) }],
      },
      {
        file: 'rss.svg',
        title: 'Gateway RSS (MiB) over each run, sampled every second',
        kind: 'line',
        xLabel: 'seconds',
        yLabel: 'RSS MiB',
        series,
      },
    ],
    details: { requested, rounds, runs },
  }
}
