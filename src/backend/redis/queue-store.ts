import type { QueueStore } from '../../core/ports'
import type { QueuedMessage } from '../../core/types'
import { pack, unpack } from './codec'
import { BUFFERS, type RedisCommander } from './clients'
import { withTimeout } from './errors'
import type { RedisKeys } from './keys'
import { ScriptRunner } from './script-runner'
import { QUEUE_PUSH_SCRIPT, QUEUE_RECEIVE_SCRIPT } from './lua/queues'

interface Stored {
  channel: string
  message: Record<string, unknown>
  enqueued: number
}

/**
 * App queues shared by all nodes: a sorted set of delivery tags scored by the time each becomes
 * visible (FIFO, since tags start with their enqueue time), a hash of the items and one of their
 * delivery counts. Pushing (with the bound) and receiving are atomic scripts, so two nodes never
 * trim twice or hand out the same message at once.
 */
export class RedisQueueStore implements QueueStore {
  private pushScript: ScriptRunner
  private receiveScript: ScriptRunner

  constructor(
    private readonly cmd: RedisCommander,
    private readonly keys: RedisKeys,
    private readonly timeoutMs: number,
  ) {
    this.pushScript = new ScriptRunner(cmd, QUEUE_PUSH_SCRIPT)
    this.receiveScript = new ScriptRunner(cmd, QUEUE_RECEIVE_SCRIPT)
  }

  private t<T>(p: Promise<T>) {
    return withTimeout(p, this.timeoutMs)
  }

  private queueKeys(queueId: string) {
    return [this.keys.queueVisible(queueId), this.keys.queueItems(queueId), this.keys.queueDeliveries(queueId)]
  }

  async push(
    queueId: string,
    items: Array<{ channel: string; message: Record<string, unknown> }>,
    maxLength: number,
    now: number,
  ) {
    if (!items.length) return 0
    const [vis, data, deliveries] = this.queueKeys(queueId)
    const packed = items.map((it) => pack({ channel: it.channel, message: it.message, enqueued: now } satisfies Stored))
    const args = [String(now), String(now).padStart(14, '0'), String(maxLength), ...packed]
    return Number(await this.t(this.pushScript.run([vis!, data!, this.keys.queueSeq(queueId), deliveries!], args)))
  }

  async receive(
    queueId: string,
    max: number,
    visibilityMs: number,
    ttlMs: number,
    now: number,
  ): Promise<QueuedMessage[]> {
    const r = await this.t(
      this.receiveScript.run<Buffer[]>(
        this.queueKeys(queueId),
        [String(now), String(max), String(visibilityMs), String(ttlMs)],
        BUFFERS,
      ),
    )
    const out: QueuedMessage[] = []
    for (let i = 0; i < r.length; i += 3) {
      const s = unpack<Stored>(r[i + 1]!)
      out.push({
        deliveryTag: r[i]!.toString(),
        channel: s.channel,
        message: s.message,
        enqueued: s.enqueued,
        redelivered: Number(r[i + 2]!.toString()),
      })
    }
    return out
  }

  async ack(queueId: string, tags: string[]) {
    if (!tags.length) return 0
    const [vis, data, deliveries] = this.queueKeys(queueId)
    await this.t(this.cmd.sendCommand(['ZREM', vis!, ...tags]))
    await this.t(this.cmd.sendCommand(['HDEL', deliveries!, ...tags]))
    return Number(await this.t(this.cmd.sendCommand(['HDEL', data!, ...tags])))
  }

  async counts(queueId: string, _ttlMs: number, now: number) {
    const vis = this.keys.queueVisible(queueId)
    const ready = Number(await this.t(this.cmd.sendCommand(['ZCOUNT', vis, '-inf', String(now)])))
    const total = Number(await this.t(this.cmd.sendCommand(['ZCARD', vis])))
    return { ready, unacknowledged: total - ready, total }
  }

  async drop(queueId: string) {
    await this.t(this.cmd.sendCommand(['DEL', ...this.queueKeys(queueId), this.keys.queueSeq(queueId)]))
  }
}
