/**
 * Connections: K idle event streams (default 50,000) on one channel of one gateway, opened from
 * subscriber processes of at most PER_PROCESS streams each, spread over loopback source addresses
 * (PER_SOURCE each: one address has only ~28k ephemeral ports, and binding a source address makes
 * the kernel search them linearly: at 20k per address opening slows to ~500/s, at 5k it does
 * ~8,000/s). At the end the gateway is stopped before the subscribers close, so the TIME_WAIT
 * state lands on the gateway's side and not on the source addresses. Reports the
 * gateway's resident memory per connection (VmRSS after − before, ÷ K) against a 6 KiB target,
 * and checks that all K streams were established, are still open after `seconds`, and still
 * deliver: one final publish must reach every one of them.
 *
 * Every stream is one file descriptor in the gateway: the gateway and the subscriber processes
 * are started with their open-file limit raised (fd-limit.ts). Where the hard limit cannot be
 * raised (no CAP_SYS_RESOURCE), K is capped to what the gateway's limit allows and the run says so.
 */
import { cpuSeconds } from '../lib/cpu'
import { fmt, openedCheck } from '../lib/delivery-checks'
import { fdLimit, openFds } from '../lib/fd-limit'
import { rssBytes } from '../lib/memory'
import type { Check, RunOptions, ScenarioResult } from '../lib/scenario'
import { startSubscribers } from '../lib/sse-subscriber-client'
import { startGateway } from '../lib/targets'
import { Timeline } from '../lib/timeline'

const CHANNEL = 'idle'
const TARGET_BYTES_PER_CONNECTION = 6 * 1024
const PER_PROCESS = 15_000
const PER_SOURCE = 5_000
/** File descriptors the gateway keeps for itself beyond its streams (it already holds some at start). */
const FD_MARGIN = 16

export async function connectionsScenario(o: RunOptions): Promise<ScenarioResult> {
  const requested = o.subscribers ?? (o.short ? 2000 : 50_000)
  const checks: Check[] = []
  const notes: string[] = []
  const ownLimit = fdLimit('self') ?? 1024

  const env: Record<string, string> = o.sseBufferBytes ? { SSE_BUFFER_BYTES: String(o.sseBufferBytes) } : {}
  const gw = await startGateway({ logDir: o.outDir, env, cpuProfile: o.profile, fdLimit: requested + 1024 })
  try {
    const gwLimit = fdLimit(gw.pid) ?? 1024
    const fds0 = openFds(gw.pid) ?? 0
    const k = Math.max(1, Math.min(requested, gwLimit - fds0 - FD_MARGIN))
    if (k < requested) {
      notes.push(`${fmt(requested)} connections are impossible here: the gateway's open-file limit is ${fmt(gwLimit)} and could not be raised ` +
        `(raising the hard limit needs CAP_SYS_RESOURCE; the harness itself runs with ${fmt(ownLimit)}); it holds ${fds0} files already, ` +
        `so ${fmt(k)} streams were opened instead`)
    }
    const perProcess = Math.min(PER_PROCESS, Math.max(100, ownLimit - 256))
    console.log(`connections: ${fmt(k)} idle streams${k < requested ? ` (of ${fmt(requested)} requested: fd limit ${fmt(gwLimit)})` : ''}, ` +
      `${Math.ceil(k / perProcess)} subscriber process(es), hold ${o.seconds} s …`)

    await Bun.sleep(1000)
    const rssBefore = rssBytes(gw.pid) ?? 0
    const cpu0 = cpuSeconds(gw.pid) ?? 0
    // the gateway's open files beyond its idle ones = its streams (sampled from /proc while they open and are held)
    const timeline = new Timeline('connections', async () => {
      const streams = Math.max(0, (openFds(gw.pid) ?? fds0) - fds0)
      return { counters: { 'streams opened': streams }, gauges: { 'streams open': streams, 'gateway RSS MiB': (rssBytes(gw.pid) ?? 0) / 2 ** 20 } }
    }).start()
    const subs = await startSubscribers({
      base: gw.base, channel: CHANNEL, key: gw.key, count: k, publishers: 1, logDir: o.outDir,
      perProcess, perSourceAddress: PER_SOURCE, fdLimit: perProcess + 1024, concurrency: 256, openTimeoutMs: 180_000, cpuProfile: o.profile,
    })
    try {
      const opened = subs.opened
      const openCpu = (cpuSeconds(gw.pid) ?? 0) - cpu0
      const rssOpened = rssBytes(gw.pid) ?? 0
      const fdsOpened = openFds(gw.pid) ?? 0
      checks.push(openedCheck('connections', k, opened))
      await Bun.sleep(o.seconds * 1000)
      const rssHeld = rssBytes(gw.pid) ?? 0
      const held = await subs.snapshot()
      checks.push({
        name: 'connections: every stream still open at the end', ok: held.open === k && held.lost === 0,
        detail: `${fmt(held.open)} of ${fmt(k)} open after ${o.seconds} s, ${held.lost} ended or closed; gateway holds ${fmt(fdsOpened)} files` +
          `${held.errorSamples.length ? `; e.g. ${held.errorSamples.slice(0, 3).join(' | ')}` : ''}`,
      })

      // one publish must reach every stream: they are live, not just open
      const res = await fetch(`${gw.base}/channels/${CHANNEL}/messages`, {
        method: 'POST', body: JSON.stringify({ name: 'bench', data: '0.0:ping' }),
        headers: { Authorization: `Basic ${Buffer.from(gw.key).toString('base64')}`, 'Content-Type': 'application/json' },
      })
      const settled = await subs.settle([res.status === 201 ? 1 : 0], 30_000)
      checks.push({
        name: 'connections: a final publish reached every stream', ok: res.status === 201 && settled.complete === k,
        detail: `publish answered ${res.status}; ${fmt(settled.complete)} of ${fmt(k)} streams received it exactly once within ${fmt(settled.ms)} ms`,
      })
      const rssAfter = rssBytes(gw.pid) ?? 0
      const perSecond = await timeline.stop()
      const streamsOver = perSecond.find((x) => x.name === 'streams open')?.points ?? []
      const rssOver = perSecond.find((x) => x.name === 'gateway RSS MiB')?.points ?? []

      const perConn = (rss: number) => (rss - rssBefore) / Math.max(1, opened.established)
      const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`
      const bytesPerConn = perConn(rssHeld)
      return {
        scenario: 'connections',
        description: 'Idle event streams (SSE) held open on one channel of one gateway: resident memory of the gateway per connection ' +
          `(VmRSS after − before ÷ streams), from subscriber processes of up to ${fmt(perProcess)} raw sockets each.`,
        load: `${fmt(k)} streams (${fmt(requested)} requested), opened 256 at a time per subscriber process, held ${o.seconds} s`,
        measurements: [],
        tables: [{
          title: 'Gateway memory',
          head: ['moment', 'VmRSS', 'bytes per connection'],
          rows: [
            ['before (idle gateway)', mib(rssBefore), ''],
            [`all ${fmt(opened.established)} streams open`, mib(rssOpened), fmt(perConn(rssOpened))],
            [`after holding ${o.seconds} s`, mib(rssHeld), fmt(bytesPerConn)],
            ['after the final publish', mib(rssAfter), fmt(perConn(rssAfter))],
          ],
        }],
        headlines: [
          { name: 'streams established and held', value: held.open, unit: `of ${fmt(requested)} requested` },
          { name: 'gateway memory per connection', value: bytesPerConn, unit: 'bytes', target: `≤ ${fmt(TARGET_BYTES_PER_CONNECTION)}`, met: bytesPerConn <= TARGET_BYTES_PER_CONNECTION },
          { name: 'streams opened per second', value: opened.established / (opened.ms / 1000), unit: '/s' },
        ],
        ratios: {},
        checks,
        notes,
        charts: [
          { file: 'throughput.svg', title: 'Streams opened per second and streams open (gateway file descriptors)', kind: 'line', xLabel: 'seconds', yLabel: 'streams',
            series: perSecond.filter((x) => x.name !== 'gateway RSS MiB') },
          { file: 'memory.svg', title: 'Gateway memory per connection (bytes, VmRSS growth ÷ streams)', kind: 'bar', yLabel: 'bytes per connection',
            categories: ['all open', `held ${o.seconds} s`, 'after final publish', 'target'],
            groups: [{ name: '', values: [perConn(rssOpened), bytesPerConn, perConn(rssAfter), TARGET_BYTES_PER_CONNECTION] }] },
          { file: 'memory-over-streams.svg', title: 'Gateway RSS (MiB) against open streams, sampled every second', kind: 'line', xLabel: 'open streams', yLabel: 'RSS MiB',
            series: [{ name: 'gateway RSS', points: streamsOver.map(([, n], i) => [n, rssOver[i]?.[1] ?? 0] as [number, number]) }] },
        ],
        details: {
          requested, attempted: k, gatewayFdLimit: gwLimit, harnessFdLimit: ownLimit, gatewayFdsAtStart: fds0, gatewayFdsOpened: fdsOpened,
          rssBefore, rssOpened, rssHeld, rssAfter, bytesPerConnection: bytesPerConn, openMs: opened.ms, gatewayCpuSecondsToOpen: openCpu,
          subscriberProcesses: subs.pids.length,
        },
      }
    } finally {
      await subs.detach()
      await gw.stop() // the gateway closes first: TIME_WAIT stays on its side
      await subs.close()
    }
  } finally {
    await gw.stop()
  }
}
