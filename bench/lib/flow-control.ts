/**
 * Flow control for publishers that nothing else holds back: keeps them at most `window` messages
 * ahead of the slowest open subscriber (every subscriber receives every message). Needed where the
 * gateway has no backpressure from subscribers to publishers, e.g. publishing on one node of a
 * Redis cluster and subscribing on another: unbounded publishing there outruns the fanout and the
 * gateway cuts every stream as too slow (80020). The window must stay well under the gateway's
 * slow-consumer budget (SSE_BUFFER_BYTES) in bytes per stream.
 */
import type { Publisher } from './publisher-client'
import type { Subscribers } from './sse-subscriber-client'

export interface FlowControl {
  /** Stops adjusting the allowance; returns the share of checks that found the publishers held back. */
  stop(): Promise<{ checks: number; heldBack: number }>
}

export function holdToSlowestSubscriber(
  pub: Publisher,
  subs: Subscribers,
  window: number,
  intervalMs = 10,
): FlowControl {
  let running = true
  let checks = 0
  let heldBack = 0
  let allowed = window
  const loop = (async () => {
    while (running) {
      const { minReceived } = await subs.snapshot()
      const next = minReceived + window
      const written = await pub.allow(next)
      checks++
      if (written >= allowed) heldBack++ // it had used up the previous allowance
      allowed = next
      await Bun.sleep(intervalMs)
    }
  })().catch(() => {
    /* a process stopping ends the loop */
  })
  return {
    stop: async () => {
      running = false
      await loop
      return { checks, heldBack }
    },
  }
}
