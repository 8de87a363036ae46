import { loadavg } from 'node:os'
import type { Backend, Deployment } from './deployment'
import type { Publisher } from './publisher-client'
import type { Subscribers } from './sse-subscriber-client'
import { Timeline } from './timeline'

/**
 * The measured window of a delivery scenario: a per-second timeline of publishes and deliveries,
 * then samples (counts and CPU of gateway, subscribers, publisher) after the warm-up and after
 * the window.
 */
export async function measureDeliveryWindow(
  label: string,
  d: Deployment,
  subs: Subscribers,
  pub: Publisher,
  warmupS: number,
  seconds: number,
) {
  const timeline = new Timeline(label, async () => {
    const [s, p] = await Promise.all([subs.snapshot(), pub.counts()])
    return { counters: { publishes: p.published, deliveries: s.received } }
  }).start()
  const sample = async () => {
    const [s, p] = await Promise.all([subs.snapshot(), pub.counts()])
    return {
      t: performance.now(),
      s,
      p,
      cpu: [d.cpuSeconds(), subs.cpuSeconds(), pub.cpuSeconds()] as const,
      load1m: loadavg()[0] ?? 0,
    }
  }
  await Bun.sleep(warmupS * 1000)
  const a = await sample()
  await Bun.sleep(seconds * 1000)
  const b = await sample()
  return { a, b, timeline }
}

/** What a delivery run measured (fanout, channels). */
export interface DeliveryFigures {
  backend: Backend
  /** Length of the measured window (s). */
  seconds: number
  publishesPerSec: number
  deliveriesPerSec: number
  /** deliveries/s ÷ (publishes/s × receivers of each message): 1 when the subscribers kept pace. */
  keptPace: number
  drainMs: number
  /** % of one core over the window: gateway (all nodes and Redis), subscriber processes, publisher. */
  cpu: { gateway: number; subscribers: number; publisher: number }
  gatewayRssMiB: number
  /** The machine's 1-minute load average when the window ended (every process's runnable work). */
  load1m: number
}

type Window = Awaited<ReturnType<typeof measureDeliveryWindow>>

/** The figures of a measured window whose messages each reach `receivers` subscribers. */
export function deliveryFigures(d: Deployment, w: Window, receivers: number, drainMs: number): DeliveryFigures {
  const { a, b } = w
  const dt = (b.t - a.t) / 1000
  const pct = (i: 0 | 1 | 2) => Math.round(((b.cpu[i] - a.cpu[i]) / dt) * 100)
  const publishesPerSec = (b.p.published - a.p.published) / dt
  const deliveriesPerSec = (b.s.received - a.s.received) / dt
  return {
    backend: d.backend,
    seconds: dt,
    publishesPerSec,
    deliveriesPerSec,
    keptPace: deliveriesPerSec / (publishesPerSec * receivers),
    drainMs,
    cpu: { gateway: pct(0), subscribers: pct(1), publisher: pct(2) },
    gatewayRssMiB: d.rssBytes() / 2 ** 20,
    load1m: b.load1m,
  }
}
