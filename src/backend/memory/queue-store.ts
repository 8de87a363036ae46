import { randomId } from '../../lib/crypto'
import type { QueueStore } from '../../core/ports'
import type { QueuedMessage } from '../../core/types'

interface Item { tag: string; channel: string; message: Record<string, unknown>; enqueued: number; redelivered: number; visibleAt: number }

/** App queues in memory (single node): FIFO, bounded, with visibility timeouts and expiry. */
export class MemoryQueueStore implements QueueStore {
  private queues = new Map<string, Item[]>()

  private q(id: string) {
    let q = this.queues.get(id)
    if (!q) this.queues.set(id, (q = []))
    return q
  }

  async push(queueId: string, items: Array<{ channel: string; message: Record<string, unknown> }>, maxLength: number, now: number) {
    const q = this.q(queueId)
    for (const it of items) q.push({ tag: randomId(16), channel: it.channel, message: it.message, enqueued: now, redelivered: 0, visibleAt: now })
    const dropped = Math.max(0, q.length - maxLength)
    if (dropped) q.splice(0, dropped)
    return dropped
  }

  async receive(queueId: string, max: number, visibilityMs: number, ttlMs: number, now: number): Promise<QueuedMessage[]> {
    const q = this.q(queueId)
    const out: QueuedMessage[] = []
    for (let i = 0; i < q.length && out.length < max; i++) {
      const it = q[i]!
      if (it.enqueued < now - ttlMs) { q.splice(i--, 1); continue }
      if (it.visibleAt > now) continue
      out.push({ deliveryTag: it.tag, channel: it.channel, message: it.message, enqueued: it.enqueued, redelivered: it.redelivered })
      it.visibleAt = now + visibilityMs
      it.redelivered++
    }
    return out
  }

  async ack(queueId: string, tags: string[]) {
    const q = this.q(queueId)
    const set = new Set(tags)
    const before = q.length
    this.queues.set(queueId, q.filter((it) => !set.has(it.tag)))
    return before - this.q(queueId).length
  }

  async counts(queueId: string, ttlMs: number, now: number) {
    const live = this.q(queueId).filter((it) => it.enqueued >= now - ttlMs)
    const unacknowledged = live.filter((it) => it.visibleAt > now).length
    return { ready: live.length - unacknowledged, unacknowledged, total: live.length }
  }

  async drop(queueId: string) { this.queues.delete(queueId) }
}
