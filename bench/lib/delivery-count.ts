/**
 * Parent side of bench/delivery-counter.ts: event streams that count what they receive, for a
 * scenario whose publishes come from a load generator with a fixed body (scale), where only the
 * number of deliveries can be checked.
 */
import { resolve } from 'node:path'
import { startAgent } from './agent'

export interface DeliveryCount {
  deliveries: number
  /** Streams that failed to open, or dropped while open. */
  failed: number
  /** Streams the server ended. */
  ended: number
}

export interface DeliveryCounter {
  pid: number
  /** Opens one stream per url; resolves with how many opened (answered 200). */
  open(urls: string[]): Promise<number>
  count(): Promise<DeliveryCount>
  stop(): Promise<void>
}

export function startDeliveryCounter(name: string, logDir: string): DeliveryCounter {
  const agent = startAgent(name, resolve(import.meta.dir, '../delivery-counter.ts'), { logDir, fdLimit: 65_536 })
  return {
    pid: agent.pid,
    open: async (urls) => (await agent.call<{ opened: number }>('open', { urls })).opened,
    count: () => agent.call<DeliveryCount>('count'),
    async stop() {
      await agent.call('close').catch(() => undefined)
      await agent.stop()
    },
  }
}

/**
 * Waits until `want` deliveries are counted, or the count has not grown for `quietMs` (what was
 * sent has arrived; a busy machine's pause is shorter), at most `maxMs`. Returns the last count.
 */
export async function settledCount(
  c: DeliveryCounter,
  want: number,
  quietMs = 3_000,
  maxMs = 30_000,
): Promise<DeliveryCount> {
  let last = await c.count()
  let grewAt = Date.now()
  const until = grewAt + maxMs
  while (last.deliveries < want && Date.now() < until && Date.now() - grewAt < quietMs) {
    await Bun.sleep(100)
    const now = await c.count()
    if (now.deliveries !== last.deliveries) grewAt = Date.now()
    last = now
  }
  return last
}
