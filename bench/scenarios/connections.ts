/**
 * Connections: K idle event streams (default 50,000) on one channel of one gateway, opened from
 * subscriber processes over many loopback source addresses (lib/idle-connections.ts). Reports
 * the gateway's resident memory per connection (VmRSS after − before, ÷ K) against a 6 KiB
 * target, and checks that all K streams were established, are still open after `seconds`, and
 * still deliver: one final publish must reach every one of them. Where the gateway's open-file
 * limit cannot be raised to K, K is capped to it and the run says so.
 */
import { fmt } from '../lib/delivery-checks'
import { memoryRows, runIdle } from '../lib/idle-connections'
import type { RunOptions, ScenarioResult } from '../lib/scenario'

const TARGET_BYTES_PER_CONNECTION = 6 * 1024

export async function connectionsScenario(o: RunOptions): Promise<ScenarioResult> {
  const requested = o.subscribers ?? (o.short ? 2000 : 50_000)
  const { run, checks, notes, series } = await runIdle(o, 'sse', requested)
  const opened = series.filter((s) => !s.name.startsWith('gateway RSS'))
  const streamsOver = series.find((s) => s.name.endsWith(' open'))?.points ?? []
  const rssOver = series.find((s) => s.name.startsWith('gateway RSS'))?.points ?? []
  const per = (rss: number) => (rss - run.rssBefore) / Math.max(1, run.established)
  return {
    scenario: 'connections',
    description:
      'Idle event streams (SSE) held open on one channel of one gateway: resident memory of the gateway per connection ' +
      `(VmRSS after − before ÷ streams), from subscriber processes of raw sockets.`,
    load: `${fmt(run.attempted)} streams (${fmt(requested)} requested), opened 256 at a time per subscriber process, held ${o.seconds} s`,
    measurements: [],
    tables: [
      { title: 'Gateway memory', head: ['moment', 'VmRSS', 'bytes per connection'], rows: memoryRows(run, o.seconds) },
    ],
    headlines: [
      { name: 'streams established and held', value: run.held, unit: `of ${fmt(requested)} requested` },
      {
        name: 'gateway memory per connection',
        value: run.bytesPerConnection,
        unit: 'bytes',
        target: `≤ ${fmt(TARGET_BYTES_PER_CONNECTION)}`,
        met: run.bytesPerConnection <= TARGET_BYTES_PER_CONNECTION,
      },
      { name: 'streams opened per second', value: run.established / (run.openMs / 1000), unit: '/s' },
    ],
    ratios: {},
    checks,
    notes,
    charts: [
      {
        file: 'throughput.svg',
        title: 'Streams opened per second and streams open (gateway file descriptors)',
        kind: 'line',
        xLabel: 'seconds',
        yLabel: 'streams',
        series: opened,
      },
      {
        file: 'memory.svg',
        title: 'Gateway memory per connection (bytes, VmRSS growth ÷ streams)',
        kind: 'bar',
        yLabel: 'bytes per connection',
        categories: ['all open', `held ${o.seconds} s`, 'after final publish', 'target'],
        groups: [
          {
            name: '',
            values: [per(run.rssOpened), run.bytesPerConnection, per(run.rssAfter), TARGET_BYTES_PER_CONNECTION],
          },
        ],
      },
      {
        file: 'memory-over-streams.svg',
        title: 'Gateway RSS (MiB) against open streams, sampled every second',
        kind: 'line',
        xLabel: 'open streams',
        yLabel: 'RSS MiB',
        series: [
          {
            name: 'gateway RSS',
            points: streamsOver.map(([, n], i) => [n, rssOver[i]?.[1] ?? 0] as [number, number]),
          },
        ],
      },
    ],
    details: run,
  }
}
