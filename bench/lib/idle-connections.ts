/**
 * One idle-connections run (the connections and realtime-connections scenarios): K subscribers
 * (event streams, or realtime connections attached to the channel) held open on one channel of a
 * fresh gateway, from subscriber processes of at most `perProcess` each; the gateway's resident
 * memory per connection (VmRSS after − before, ÷ K); and checks that all K opened, are still open
 * after `seconds`, and still deliver: one final publish must reach every one of them. At the end
 * the gateway is stopped before the subscribers close, so the TIME_WAIT state lands on the
 * gateway's side and not on the client addresses.
 *
 * Every connection is one file descriptor in the gateway and one in a subscriber process: both
 * are started with their open-file limit raised (fd-limit.ts). Where the hard limit cannot be
 * raised (no CAP_SYS_RESOURCE), K is capped to what the gateway's limit allows and the run says so.
 *
 * Event streams are opened from many loopback source addresses (PER_SOURCE each: one address has
 * only ~28k ephemeral ports, and binding a source address makes the kernel search them linearly:
 * at 20k per address opening slows to ~500/s, at 5k it does ~8,000/s). Bun's WebSocket client
 * cannot bind one, so realtime connections all come from 127.0.0.1 (fine up to ~28k).
 */
import { cpuSeconds } from './cpu'
import { fmt, openedCheck } from './delivery-checks'
import { openedWhat } from './fanout-run'
import { fdLimit, openFds } from './fd-limit'
import { rssBytes } from './memory'
import type { Check, RunOptions, Series } from './scenario'
import { startSubscribers, type Transport } from './sse-subscriber-client'
import { startGateway } from './targets'
import { Timeline } from './timeline'

const CHANNEL = 'idle'
const PER_SOURCE = 5_000
/** Connections per subscriber process: raw sockets are cheap; a WebSocket client holds more. */
const PER_PROCESS: Record<Transport, number> = { sse: 15_000, realtime: 5_000 }
/** File descriptors the gateway keeps for itself beyond its connections (it already holds some at start). */
const FD_MARGIN = 16

export interface IdleRun {
  transport: Transport
  requested: number
  /** Connections attempted (requested, capped by the gateway's open-file limit). */
  attempted: number
  established: number
  held: number
  openMs: number
  rssBefore: number
  rssOpened: number
  rssHeld: number
  rssAfter: number
  bytesPerConnection: number
  gatewayCpuSecondsToOpen: number
  gatewayFdLimit: number
  subscriberProcesses: number
}

export interface IdleOutcome {
  run: IdleRun
  checks: Check[]
  notes: string[]
  /** Per second: connections opened and open (gateway file descriptors), gateway RSS MiB. */
  series: Series[]
}

const what = (t: Transport) => (t === 'sse' ? 'event streams' : 'realtime connections')

export async function runIdle(o: RunOptions, transport: Transport, requested: number): Promise<IdleOutcome> {
  const checks: Check[] = []
  const notes: string[] = []
  const label = `${what(transport)}`
  const ownLimit = fdLimit('self') ?? 1024
  const env: Record<string, string> = o.sseBufferBytes ? { SSE_BUFFER_BYTES: String(o.sseBufferBytes) } : {}
  const gw = await startGateway({
    logDir: o.outDir,
    name: `gateway-${transport}`,
    env,
    cpuProfile: o.profile,
    fdLimit: requested + 1024,
  })
  try {
    const gwLimit = fdLimit(gw.pid) ?? 1024
    const fds0 = openFds(gw.pid) ?? 0
    const k = Math.max(1, Math.min(requested, gwLimit - fds0 - FD_MARGIN))
    if (k < requested) {
      notes.push(
        `${label}: ${fmt(requested)} connections are impossible here: the gateway's open-file limit is ${fmt(gwLimit)} and could not be raised ` +
          `(raising the hard limit needs CAP_SYS_RESOURCE; the harness itself runs with ${fmt(ownLimit)}); it holds ${fds0} files already, ` +
          `so ${fmt(k)} were opened instead`,
      )
    }
    const perProcess = Math.min(PER_PROCESS[transport], Math.max(100, ownLimit - 256))
    console.log(
      `${label}: ${fmt(k)} idle${k < requested ? ` (of ${fmt(requested)} requested: fd limit ${fmt(gwLimit)})` : ''}, ` +
        `${Math.ceil(k / perProcess)} subscriber process(es), hold ${o.seconds} s …`,
    )

    await Bun.sleep(1000)
    const rssBefore = rssBytes(gw.pid) ?? 0
    const cpu0 = cpuSeconds(gw.pid) ?? 0
    // the gateway's open files beyond its idle ones = its connections (sampled from /proc while they open and are held)
    const timeline = new Timeline(label, async () => {
      const open = Math.max(0, (openFds(gw.pid) ?? fds0) - fds0)
      return {
        counters: { [`${what(transport)} opened`]: open },
        gauges: {
          [`${what(transport)} open`]: open,
          [`gateway RSS MiB (${transport})`]: (rssBytes(gw.pid) ?? 0) / 2 ** 20,
        },
      }
    }).start()
    const subs = await startSubscribers({
      transport,
      base: gw.base,
      channel: CHANNEL,
      key: gw.key,
      count: k,
      publishers: 1,
      logDir: o.outDir,
      name: `${transport === 'sse' ? 'subscriber' : 'rt-subscriber'}-idle`,
      perProcess,
      ...(transport === 'sse' ? { perSourceAddress: PER_SOURCE } : {}),
      fdLimit: perProcess + 1024,
      concurrency: 256,
      openTimeoutMs: 180_000,
      cpuProfile: o.profile,
    })
    try {
      const opened = subs.opened
      const openCpu = (cpuSeconds(gw.pid) ?? 0) - cpu0
      const rssOpened = rssBytes(gw.pid) ?? 0
      const fdsOpened = openFds(gw.pid) ?? 0
      checks.push(openedCheck(label, k, opened, openedWhat(transport)))
      await Bun.sleep(o.seconds * 1000)
      const rssHeld = rssBytes(gw.pid) ?? 0
      const held = await subs.snapshot()
      checks.push({
        name: `${label}: every one still open at the end`,
        ok: held.open === k && held.lost === 0,
        detail:
          `${fmt(held.open)} of ${fmt(k)} open after ${o.seconds} s, ${held.lost} ended or closed; gateway holds ${fmt(fdsOpened)} files` +
          `${held.errorSamples.length ? `; e.g. ${held.errorSamples.slice(0, 3).join(' | ')}` : ''}`,
      })

      // one publish must reach every connection: they are live, not just open
      const res = await fetch(`${gw.base}/channels/${CHANNEL}/messages`, {
        method: 'POST',
        body: JSON.stringify({ name: 'bench', data: '0.0:ping' }),
        headers: {
          Authorization: `Basic ${Buffer.from(gw.key).toString('base64')}`,
          'Content-Type': 'application/json',
        },
      })
      const settled = await subs.settle([res.status === 201 ? 1 : 0], 30_000)
      checks.push({
        name: `${label}: a final publish reached every one`,
        ok: res.status === 201 && settled.complete === k,
        detail: `publish answered ${res.status}; ${fmt(settled.complete)} of ${fmt(k)} received it exactly once within ${fmt(settled.ms)} ms`,
      })
      const rssAfter = rssBytes(gw.pid) ?? 0
      const series = await timeline.stop()
      return {
        run: {
          transport,
          requested,
          attempted: k,
          established: opened.established,
          held: held.open,
          openMs: opened.ms,
          rssBefore,
          rssOpened,
          rssHeld,
          rssAfter,
          bytesPerConnection: (rssHeld - rssBefore) / Math.max(1, opened.established),
          gatewayCpuSecondsToOpen: openCpu,
          gatewayFdLimit: gwLimit,
          subscriberProcesses: subs.pids.length,
        },
        checks,
        notes,
        series,
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

const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`

/** The memory table of a run: RSS at each moment and per connection. */
export function memoryRows(r: IdleRun, seconds: number): string[][] {
  const per = (rss: number) => fmt((rss - r.rssBefore) / Math.max(1, r.established))
  return [
    ['before (idle gateway)', mib(r.rssBefore), ''],
    [`all ${fmt(r.established)} open`, mib(r.rssOpened), per(r.rssOpened)],
    [`after holding ${seconds} s`, mib(r.rssHeld), per(r.rssHeld)],
    ['after the final publish', mib(r.rssAfter), per(r.rssAfter)],
  ]
}
