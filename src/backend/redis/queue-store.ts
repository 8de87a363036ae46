import type { QueueStore } from '../../core/ports'
import type { QueuedMessage } from '../../core/types'
import { pack, unpack } from './codec'
import { BUFFERS, withTimeout, type RedisClient } from './connection'
import type { RedisKeys } from './keys'
import { ScriptRunner } from './script-runner'
import { QUEUE_RECEIVE_SCRIPT } from './scripts'

interface Stored { channel: string; message: Record<string, unknown>; enqueued: number; deliveries: number }

/**
 * App queues shared by all nodes: a sorted set of delivery tags scored by the time each becomes
 * visible (FIFO, since tags start with their enqueue time) and a hash of the items. Receiving is
 * one atomic script, so two nodes never hand out the same message at once.
 */
export class RedisQueueStore implements QueueStore {
  private receiveScript: ScriptRunner

  constructor(private readonly cmd: RedisClient, private readonly keys: RedisKeys, private readonly timeoutMs: number) {
    this.receiveScript = new ScriptRunner(cmd, QUEUE_RECEIVE_SCRIPT)
  }

  private t<T>(p: Promise<T>) { return withTimeout(p, this.timeoutMs) }

  async push(queueId: string, items: Array<{ channel: string; message: Record<string, unknown> }>, maxLength: number, now: number) {
    const [vis, data] = [this.keys.queueVisible(queueId), this.keys.queueItems(queueId)]
    // tags: enqueue time, then a queue-wide sequence, so equal scores still sort first-in first-out
    const last = Number(await this.t(this.cmd.sendCommand(['INCRBY', this.keys.queueSeq(queueId), String(items.length)])))
    const ops: Promise<unknown>[] = []
    for (const [i, it] of items.entries()) {
      const tag = `${String(now).padStart(14, '0')}${String(last - items.length + i + 1).padStart(12, '0')}`
      ops.push(this.cmd.sendCommand(['HSET', data, tag, pack({ channel: it.channel, message: it.message, enqueued: now, deliveries: 0 } satisfies Stored)]))
      ops.push(this.cmd.sendCommand(['ZADD', vis, String(now), tag]))
    }
    await this.t(Promise.all(ops))
    const size = Number(await this.t(this.cmd.sendCommand(['ZCARD', vis])))
    if (size <= maxLength) return 0
    const popped = (await this.t(this.cmd.sendCommand(['ZPOPMIN', vis, String(size - maxLength)]))) as unknown as string[]
    const tags = popped.filter((_, i) => i % 2 === 0)
    if (tags.length) await this.t(this.cmd.sendCommand(['HDEL', data, ...tags]))
    return tags.length
  }

  async receive(queueId: string, max: number, visibilityMs: number, ttlMs: number, now: number): Promise<QueuedMessage[]> {
    const r = (await this.t(this.receiveScript.run(
      [this.keys.queueVisible(queueId), this.keys.queueItems(queueId)], [String(now), String(max), String(visibilityMs), String(ttlMs)], BUFFERS,
    ))) as unknown as Buffer[]
    const out: QueuedMessage[] = []
    for (let i = 0; i < r.length; i += 2) {
      const tag = r[i]!.toString()
      const s = unpack<Stored>(r[i + 1]!)
      out.push({ deliveryTag: tag, channel: s.channel, message: s.message, enqueued: s.enqueued, redelivered: s.deliveries })
      s.deliveries++
      await this.t(this.cmd.sendCommand(['HSET', this.keys.queueItems(queueId), tag, pack(s)]))
    }
    return out
  }

  async ack(queueId: string, tags: string[]) {
    if (!tags.length) return 0
    await this.t(this.cmd.sendCommand(['ZREM', this.keys.queueVisible(queueId), ...tags]))
    return Number(await this.t(this.cmd.sendCommand(['HDEL', this.keys.queueItems(queueId), ...tags])))
  }

  async counts(queueId: string, _ttlMs: number, now: number) {
    const vis = this.keys.queueVisible(queueId)
    const ready = Number(await this.t(this.cmd.sendCommand(['ZCOUNT', vis, '-inf', String(now)])))
    const total = Number(await this.t(this.cmd.sendCommand(['ZCARD', vis])))
    return { ready, unacknowledged: total - ready, total }
  }

  async drop(queueId: string) {
    await this.t(this.cmd.sendCommand(['DEL', this.keys.queueVisible(queueId), this.keys.queueItems(queueId), this.keys.queueSeq(queueId)]))
  }
}

