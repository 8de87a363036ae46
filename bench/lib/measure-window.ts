import type { Deployment } from './deployment'
import type { Publisher } from './publisher-client'
import type { Subscribers } from './sse-subscriber-client'
import { Timeline } from './timeline'

/**
 * The measured window of a delivery scenario: a per-second timeline of publishes and deliveries,
 * then samples (counts and CPU of gateway, subscribers, publisher) after the warm-up and after
 * the window.
 */
export async function measureDeliveryWindow(label: string, d: Deployment, subs: Subscribers, pub: Publisher, warmupS: number, seconds: number) {
  const timeline = new Timeline(label, async () => {
    const [s, p] = await Promise.all([subs.snapshot(), pub.counts()])
    return { counters: { publishes: p.published, deliveries: s.received } }
  }).start()
  const sample = async () => {
    const [s, p] = await Promise.all([subs.snapshot(), pub.counts()])
    return { t: performance.now(), s, p, cpu: [d.cpuSeconds(), subs.cpuSeconds(), pub.cpuSeconds()] as const }
  }
  await Bun.sleep(warmupS * 1000)
  const a = await sample()
  await Bun.sleep(seconds * 1000)
  const b = await sample()
  return { a, b, timeline }
}
