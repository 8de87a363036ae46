/**
 * One fan-out run (the fanout and realtime-fanout scenarios): a fresh deployment, N subscribers
 * of one channel in a separate process (event streams or realtime connections), P publishing
 * keep-alive HTTP connections each sending its next sequence-numbered message when the previous
 * one is acknowledged, flow-controlled to at most `window` messages ahead of the slowest
 * subscriber; a measured window after the warm-up; then every subscriber must get every
 * acknowledged message once and in order.
 */
import { availableParallelism } from 'node:os'
import { boundOf, perCpuSecond } from './bound'
import { cutNote, deliveryChecks, fmt, openedCheck, publishCheck } from './delivery-checks'
import { startDeployment, type Backend } from './deployment'
import { holdToSlowestSubscriber } from './flow-control'
import { deliveryFigures, measureDeliveryWindow, type DeliveryFigures } from './measure-window'
import { sameChannel, startPublisher } from './publisher-client'
import type { Check, RunOptions, Series } from './scenario'
import { startSubscribers, type Transport } from './sse-subscriber-client'

const MESSAGE_BYTES = 100
const CHANNEL = 'fanout'

export interface FanoutSpec {
  backend: Backend
  transport: Transport
  publishers: number
  subscribers: number
  /** Most messages the publishers may be ahead of the slowest subscriber; 0 = unbounded. */
  window: number
  /** Prefix of checks, notes and progress lines. */
  label: string
  /** Suffix of the process log names. */
  name: string
}

export interface FanoutRun extends DeliveryFigures {
  transport: Transport
  publishers: number
  /** Share of flow-control checks that found the publishers at their allowance. */
  heldBack: number
}

export interface FanoutOutcome {
  run?: FanoutRun
  checks: Check[]
  notes: string[]
  /** Deliveries per second over the run (warm-up included). */
  series: Series[]
}

export const fanoutMessageBytes = MESSAGE_BYTES

/** What an opened subscriber is, per transport (openedCheck). */
export const openedWhat = (t: Transport) =>
  t === 'sse' ? 'stream opened (200 and first bytes)' : 'realtime connection attached (CONNECTED, ATTACHED)'

export async function runFanout(o: RunOptions, f: FanoutSpec): Promise<FanoutOutcome> {
  const { label, subscribers, publishers: P, backend } = f
  const checks: Check[] = []
  const notes: string[] = []
  const series: Series[] = []
  const env: Record<string, string> = o.sseBufferBytes ? { SSE_BUFFER_BYTES: String(o.sseBufferBytes) } : {}
  const d = await startDeployment(backend, {
    logDir: o.outDir,
    name: `gateway-${f.name}`,
    env,
    cpuProfile: o.profile,
    fdLimit: subscribers + 1024,
  })
  try {
    const subs = await startSubscribers({
      transport: f.transport,
      base: d.subscribeTo.base,
      channel: CHANNEL,
      key: d.key,
      count: subscribers,
      publishers: P,
      logDir: o.outDir,
      fdLimit: subscribers + 1024,
      cpuProfile: o.profile,
      name: `${f.transport === 'sse' ? 'subscriber' : 'rt-subscriber'}-${f.name}`,
    })
    try {
      checks.push(openedCheck(label, subscribers, subs.opened, openedWhat(f.transport)))
      if (subs.opened.established !== subscribers) return { checks, notes, series }
      const pub = await startPublisher({
        base: d.publishTo.base,
        logDir: o.outDir,
        lanes: sameChannel(P, CHANNEL, d.key),
        connections: P,
        pipeline: 1,
        rate: 0,
        stamps: false,
        bytes: MESSAGE_BYTES,
        cpuProfile: o.profile,
        name: `publisher-${f.name}`,
        ...(f.window > 0 ? { allowance: f.window } : {}),
      })
      const flow = f.window > 0 ? holdToSlowestSubscriber(pub, subs, f.window) : undefined
      const w = await measureDeliveryWindow(label, d, subs, pub, o.warmup, o.seconds)
      const held = await flow?.stop()
      const published = await pub.stop()
      const settled = await subs.settle(published.acked, o.short ? 20_000 : 60_000)
      const perSecond = await w.timeline.stop()
      series.push(
        ...perSecond
          .filter((s) => s.name === 'deliveries/s')
          .map((s) => ({ ...s, name: `deliveries/s, ${label}`, dashed: backend === 'redis' })),
      )
      const run: FanoutRun = {
        ...deliveryFigures(d, w, subscribers, settled.ms),
        transport: f.transport,
        publishers: P,
        heldBack: held ? held.heldBack / Math.max(1, held.checks) : 0,
      }
      checks.push(publishCheck(label, published))
      checks.push(...deliveryChecks(label, subscribers, published.published, settled))
      notes.push(...cutNote(settled).map((n) => `${label}: ${n}`))
      if (run.cpu.subscribers > 90)
        notes.push(
          `${label}: the subscriber process used ${run.cpu.subscribers}% of a core: it may have been the bottleneck`,
        )
      return { run, checks, notes, series }
    } finally {
      await subs.close()
    }
  } finally {
    await d.stop()
  }
}

/**
 * Why two runs of one shape can differ by 2x (issue 46: 858k deliveries/s in fanout, 1.74M in
 * realtime-fanout 20 s later): on a machine shared with other work, the rate is what CPU the
 * gateway got. Per gateway CPU-second the runs agree.
 */
export const FANOUT_NOTE =
  'deliveries/s is what the gateway could do with the CPU it got: where the gateway is not the bound ("bounded by"), ' +
  'runs of the same shape differ with what else the machine ran (in a smoke run of this machine, 595k and 520k/s ' +
  'at 46% and 44% of a core: 1.29M and 1.18M per gateway CPU-second). Compare runs by deliveries per gateway CPU-second.'

export const FANOUT_HEAD = [
  'backend',
  'subscribers',
  'publishers',
  'publishes/s',
  'deliveries/s',
  'kept pace',
  'held back by flow control',
  'drain after stop',
  'gateway CPU',
  'subscriber CPU',
  'publisher CPU',
  'gateway RSS',
  'deliveries per gateway CPU-s',
  'bounded by',
]

export function fanoutRow(r: FanoutRun, window: number): string[] {
  return [
    r.backend,
    r.transport === 'sse' ? 'event streams' : 'realtime',
    String(r.publishers),
    fmt(r.publishesPerSec),
    fmt(r.deliveriesPerSec),
    `${(r.keptPace * 100).toFixed(1)}%`,
    window > 0 ? `${(r.heldBack * 100).toFixed(0)}% of checks` : 'off',
    `${fmt(r.drainMs)} ms`,
    `${r.cpu.gateway}%`,
    `${r.cpu.subscribers}%`,
    `${r.cpu.publisher}%`,
    `${r.gatewayRssMiB.toFixed(0)} MiB`,
    fmt(perCpuSecond(r.deliveriesPerSec, r.cpu.gateway) ?? NaN),
    boundOf(
      { gateway: r.cpu.gateway, subscribers: r.cpu.subscribers, publisher: r.cpu.publisher },
      { cores: availableParallelism(), load: r.load1m },
    ),
  ]
}
