import type { ConfirmChannel, Options } from 'amqplib'
import type { BrokerQueue } from '../../core/ports'
import { settleWithin } from '../../lib/sleep'
import type { AccountShare, BufferBudget, Evictable } from './buffer-budget'
import { closeQuietly, type AmqpConnection } from './connection'

/**
 * How long a management step on the lane's connection (a channel opened, a queue declared or
 * deleted) waits for the broker's answer: one that stopped answering without closing is found out
 * by the heartbeat only after a minute or two, and the API call waiting on it answers 503 sooner.
 */
const BROKER_ANSWER_MS = 10_000
const notAnswered = (ms: number) => new Error(`the AMQP broker did not answer within ${ms} ms`)
const answered = <T>(p: Promise<T>): Promise<T> => settleWithin(p, BROKER_ANSWER_MS, notAnswered)

/** Messages published and not yet confirmed, at most (per app). */
const WINDOW = 1000
/** Pause before messages the broker refused (nack) are sent again. */
const NACK_PAUSE_MS = 500
/** Deleted queue names remembered, so a late retry does not declare them again. */
const MAX_DELETED = 1000

export type DropReason = 'full' | 'expired' | 'deleted' | 'stopped'

/** What a lane reports: messages the broker confirmed, and messages given up. */
export interface LaneEvents {
  delivered(lane: AppLane, n: number): void
  dropped(lane: AppLane, reason: DropReason): void
  /** A message the broker refused or did not confirm, to be sent again. */
  retried(): void
  error(e: unknown): void
}

interface Pending {
  seq: number
  queue: BrokerQueue
  body: Buffer
  messageId: string
  headers: Record<string, string>
  /** When it was routed (ms): it expires `queue.ttlMs` later, wherever it is. */
  routed: number
}

/** Queue arguments: ttl and length bound; past the bound the oldest message is dropped (as in the hosted service). */
export const queueOptions = (q: BrokerQueue): Options.AssertQueue => ({
  durable: true,
  arguments: { 'x-message-ttl': q.ttlMs, 'x-max-length': q.maxLength, 'x-overflow': 'drop-head' },
})
export const isPreconditionFailed = (e: unknown) => (e as { code?: unknown })?.code === 406

/**
 * One app's queues on the broker: its vhost's connection and the messages this node holds for
 * them. Publishing never waits on the broker: `push` appends to the lane, and one pump publishes
 * in order with publisher confirms (at most WINDOW unconfirmed). A message the broker does not
 * confirm (connection lost, nack) is put back in front, in order, and sent again once connected:
 * delivery into the queue is at least once (a message whose confirm was lost with the connection
 * arrives twice; its AMQP message id says so). One older than its queue's ttl is dropped unsent
 * (it would have expired in the queue). What it holds counts against the node's BufferBudget
 * under its account's share; every drop is reported.
 */
export class AppLane implements Evictable {
  private buffer: Pending[] = []
  private head = 0
  /** Refused or unconfirmed messages, put back in front of `buffer` by the pump. */
  private failed: Pending[] = []
  private retryAt = 0
  private retryTimer?: ReturnType<typeof setTimeout>
  private inFlight = 0
  private seq = 0
  private pumping = false
  private closed = false
  private closedAs: DropReason = 'deleted'
  /** Queues declared on the connection of `declaredOn` (declared again on a new connection). */
  private declared = new Set<string>()
  private declaredOn = -1
  private deleted = new Set<string>()
  /** Set at the first message: the account whose share of the node's buffer this lane takes. */
  share?: AccountShare
  /** Management calls in progress (the lane is not closed for idleness meanwhile). */
  busy = 0
  lastUsed = Date.now()

  constructor(
    readonly appId: string,
    readonly conn: AmqpConnection,
    private readonly budget: BufferBudget,
    private readonly events: LaneEvents,
  ) {}

  /** Messages held: waiting, to be retried, or published and not yet confirmed. */
  held(): number {
    return this.waiting() + this.inFlight
  }

  waiting(): number {
    return this.buffer.length - this.head + this.failed.length
  }

  /** Takes a message when the node's budget has room for its account (else drops it: full). */
  push(
    share: AccountShare,
    queue: BrokerQueue,
    body: string,
    props: { messageId: string; headers: Record<string, string> },
  ) {
    this.lastUsed = Date.now()
    if (!this.share) this.share = share
    if (this.closed || !this.budget.take(this.share)) return this.events.dropped(this, 'full')
    this.buffer.push({
      seq: ++this.seq,
      queue,
      body: Buffer.from(body),
      messageId: props.messageId,
      headers: props.headers,
      routed: Date.now(),
    })
    this.pump()
  }

  evictOldest(): boolean {
    if (this.failed.length) {
      let oldest = 0
      for (let i = 1; i < this.failed.length; i++) if (this.failed[i]!.seq < this.failed[oldest]!.seq) oldest = i
      this.failed.splice(oldest, 1)
    } else if (this.head < this.buffer.length) this.shift()
    else return false
    this.drop('full')
    return true
  }

  private drop(reason: DropReason) {
    this.budget.release(this.share!)
    this.events.dropped(this, reason)
  }

  /** Publishes what waits, in order, while connected and within the window. */
  pump(): void {
    if (!this.pumping) void this.run().catch(this.events.error)
  }

  private async run() {
    this.pumping = true
    try {
      for (;;) {
        if (this.failed.length) {
          const wait = this.retryAt - Date.now()
          if (wait > 0) {
            this.retryTimer ??= setTimeout(() => {
              this.retryTimer = undefined
              this.pump()
            }, wait)
            return
          }
          this.requeueFailed()
        }
        const ch = this.conn.publisher()
        if (this.closed || !ch || this.inFlight >= WINDOW || this.head >= this.buffer.length) return
        const item = this.buffer[this.head]!
        if (this.deleted.has(item.queue.name)) {
          this.shift()
          this.drop('deleted')
          continue
        }
        const left = item.queue.ttlMs - (Date.now() - item.routed)
        if (left <= 0) {
          this.shift()
          this.drop('expired')
          continue
        }
        if (this.declaredOn !== this.conn.generation) {
          this.declared.clear()
          this.declaredOn = this.conn.generation
        }
        if (!this.declared.has(item.queue.name)) {
          // declared again on each connection: the broker may have lost it (a wiped node)
          if (!(await this.declareQuietly(item.queue))) return
          continue
        }
        this.shift()
        this.publish(ch, item, left)
      }
    } finally {
      this.pumping = false
    }
  }

  private shift() {
    this.buffer[this.head++] = undefined as unknown as Pending
    if (this.head > 1024 && this.head * 2 > this.buffer.length) {
      this.buffer = this.buffer.slice(this.head)
      this.head = 0
    }
  }

  private requeueFailed() {
    const again = this.failed.sort((a, b) => a.seq - b.seq)
    this.failed = []
    this.buffer = again.concat(this.buffer.slice(this.head))
    this.head = 0
  }

  private publish(ch: ConfirmChannel, item: Pending, ttlLeft: number) {
    this.inFlight++
    let settled = false
    const done = (err: unknown) => {
      if (settled) return
      settled = true
      this.inFlight--
      if (err == null) {
        this.budget.release(this.share!)
        this.events.delivered(this, 1)
      } else if (this.closed) this.drop(this.closedAs)
      else {
        this.events.retried()
        this.failed.push(item)
        if (ch === this.conn.publisher()) this.retryAt = Date.now() + NACK_PAUSE_MS
      }
      this.pump()
    }
    try {
      ch.sendToQueue(
        item.queue.name,
        item.body,
        {
          persistent: true,
          contentType: 'application/json',
          messageId: item.messageId,
          timestamp: Math.floor(item.routed / 1000),
          // the time it waited here counts against its ttl
          expiration: String(Math.ceil(ttlLeft)),
          headers: item.headers,
        },
        done,
      )
    } catch (e) {
      done(e)
    }
  }

  /** Declares the queue for the pump; false when the connection is gone (the pump waits for the next). */
  private async declareQuietly(q: BrokerQueue): Promise<boolean> {
    const generation = this.conn.generation
    try {
      await this.declareQueue(q)
    } catch (e) {
      if (this.conn.generation !== generation || !this.conn.publisher()) return false
      // declared elsewhere with other arguments, or refused: publish anyway (the broker routes or drops it)
      if (!isPreconditionFailed(e)) this.events.error(e)
    }
    this.declared.add(q.name)
    return true
  }

  /**
   * Declares the queue (durable, with its bounds) in the app's vhost; rejects when not connected
   * within 5 s, or when the broker does not answer a step within BROKER_ANSWER_MS.
   */
  async declareQueue(q: BrokerQueue): Promise<void> {
    const model = await this.conn.connected(5000)
    const ch = await answered(model.createChannel())
    ch.on('error', () => {})
    try {
      await answered(ch.assertQueue(q.name, queueOptions(q)))
    } finally {
      await closeQuietly(ch)
    }
    this.deleted.delete(q.name)
    if (this.declaredOn === this.conn.generation) this.declared.add(q.name)
  }

  /**
   * Deletes the queue with its messages; what the lane holds for it is dropped as the pump reaches
   * it. Rejects as `declareQueue` does.
   */
  async removeQueue(q: BrokerQueue): Promise<void> {
    const model = await this.conn.connected(5000)
    this.deleted.add(q.name)
    if (this.deleted.size > MAX_DELETED) this.deleted.delete(this.deleted.values().next().value!)
    this.declared.delete(q.name)
    const ch = await answered(model.createChannel())
    ch.on('error', () => {})
    try {
      await answered(ch.deleteQueue(q.name))
    } catch (e) {
      // older brokers answer 404 for a queue that is gone already
      if ((e as { code?: unknown })?.code !== 404) throw e
    } finally {
      await closeQuietly(ch)
    }
  }

  /** Stops the lane: what it holds is dropped (`reason`), its connection closed. */
  async close(reason: DropReason): Promise<void> {
    this.closed = true
    this.closedAs = reason
    clearTimeout(this.retryTimer)
    const waiting = this.waiting()
    this.buffer = []
    this.head = 0
    this.failed = []
    for (let i = 0; i < waiting; i++) this.drop(reason)
    if (this.share) this.budget.leave(this.share, this)
    // unconfirmed ones are dropped as their confirms fail with the connection
    await this.conn.close()
  }
}
