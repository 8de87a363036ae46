import type { ConfirmChannel, Options } from 'amqplib'
import type { BrokerQueue, QueueBroker } from '../../core/ports'
import { GatewayError } from '../../errors'
import { hmacSha256 } from '../../lib/crypto'
import { metrics } from '../../lib/metrics'
import { sleep } from '../../lib/sleep'
import type { AmqpConnection } from './connection'
import type { RabbitManagement } from './management'

const deliveries = metrics.counter(
  'gateway_queue_deliveries_total',
  'Queue (AMQP) messages by outcome: delivered (confirmed by the broker), retried (broker unreachable or refused: sent again).',
)
const dropped = metrics.counter(
  'gateway_queue_dropped_total',
  "Queue (AMQP) messages given up, by reason: full (this node's buffer), expired (older than the queue's ttl), deleted (queue deleted).",
)
const DELIVERED = { outcome: 'delivered' }
const RETRIED = { outcome: 'retried' }
type DropReason = 'full' | 'expired' | 'deleted'
const REASONS = Object.fromEntries((['full', 'expired', 'deleted'] as const).map((r) => [r, { reason: r }])) as Record<
  DropReason,
  { reason: DropReason }
>

/** Messages published and not yet confirmed, at most. */
const WINDOW = 1000
/** Pause before messages the broker refused (nack) are sent again. */
const NACK_PAUSE_MS = 500
/** Deleted queue names remembered, so a late retry does not declare them again. */
const MAX_DELETED = 10_000

export interface AmqpBrokerSettings {
  /** Vhost of the queues and of the consumers' permissions. */
  vhost: string
  /** `scheme://host:port/vhost` that consumers are told to connect to. */
  publicUrl: string
  /** Messages held at most (waiting, being retried, or published and not confirmed). */
  bufferMessages: number
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

/** The consumer user of an app (it reads that app's queues and does nothing else). */
export const consumerUser = (appId: string) => `app.${appId}`
/** Every node derives the same password from the store's secret: nothing to store or share. */
const consumerPassword = (secret: string, appId: string) => hmacSha256(secret, `amqp-consumer:${appId}`, 'base64url')
const escapeRegExp = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** Queue arguments: ttl and length bound; past the bound the oldest message is dropped (as in the hosted service). */
const queueOptions = (q: BrokerQueue): Options.AssertQueue => ({
  durable: true,
  arguments: { 'x-message-ttl': q.ttlMs, 'x-max-length': q.maxLength, 'x-overflow': 'drop-head' },
})
const isPreconditionFailed = (e: unknown) => (e as { code?: unknown })?.code === 406

/**
 * App queues in RabbitMQ. Publishing never waits on the broker: `send` appends to this node's
 * bounded buffer, and one pump publishes in order with publisher confirms (at most WINDOW
 * unconfirmed). A message the broker does not confirm (connection lost, nack) is put back in
 * front, in order, and sent again once connected: delivery into the queue is at least once (a
 * message whose confirm was lost with the connection arrives twice; its AMQP message id says so).
 * Beyond `bufferMessages` new messages are dropped; one older than its queue's ttl is dropped
 * unsent (it would have expired in the queue); every drop is counted.
 */
export class AmqpQueueBroker implements QueueBroker {
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
  /** Queues declared on the connection of `declaredOn` (declared again on a new connection). */
  private declared = new Set<string>()
  private declaredOn = -1
  private deleted = new Set<string>()
  private readonly untrack: () => void

  constructor(
    private readonly conn: AmqpConnection,
    private readonly mgmt: RabbitManagement,
    private readonly secret: () => Promise<string>,
    private readonly s: AmqpBrokerSettings,
    private readonly onError: (e: unknown) => void,
  ) {
    this.untrack = metrics.gauge('gateway_queue_buffered', 'Queue (AMQP) messages this node holds unconfirmed.', () =>
      this.size(),
    )
  }

  /** Messages held: waiting, to be retried, or published and not yet confirmed. */
  size(): number {
    return this.buffer.length - this.head + this.failed.length + this.inFlight
  }

  send(queue: BrokerQueue, body: string, props: { messageId: string; headers: Record<string, string> }): void {
    if (this.closed || this.size() >= this.s.bufferMessages) {
      dropped.inc(REASONS.full)
      return
    }
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

  /** Publishes what waits, in order, while connected and within the window. */
  pump(): void {
    if (!this.pumping) void this.run().catch(this.onError)
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
        if (!ch || this.inFlight >= WINDOW || this.head >= this.buffer.length) return
        const item = this.buffer[this.head]!
        if (this.deleted.has(item.queue.name)) {
          this.shift()
          dropped.inc(REASONS.deleted)
          continue
        }
        const left = item.queue.ttlMs - (Date.now() - item.routed)
        if (left <= 0) {
          this.shift()
          dropped.inc(REASONS.expired)
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
      if (err == null) deliveries.inc(DELIVERED)
      else {
        deliveries.inc(RETRIED)
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
      if (!isPreconditionFailed(e)) this.onError(e)
    }
    this.declared.add(q.name)
    return true
  }

  private async declareQueue(q: BrokerQueue): Promise<void> {
    const model = await this.conn.connected(5000)
    const ch = await model.createChannel()
    ch.on('error', () => {})
    try {
      await ch.assertQueue(q.name, queueOptions(q))
    } finally {
      await ch.close().catch(() => {})
    }
  }

  /** Management calls that fail are reported (the API answers 503 without the cause). */
  private reported<T>(p: Promise<T>): Promise<T> {
    return p.catch((e) => {
      if (!(e instanceof GatewayError)) this.onError(e)
      throw e
    })
  }

  declare(q: BrokerQueue): Promise<void> {
    return this.reported(this.declareWithUser(q))
  }

  remove(q: BrokerQueue): Promise<void> {
    return this.reported(this.removeQueue(q))
  }

  private async declareWithUser(q: BrokerQueue): Promise<void> {
    const appId = q.appId
    const user = consumerUser(appId)
    await this.mgmt.putUser(user, consumerPassword(await this.secret(), appId))
    await this.mgmt.setPermissions(this.s.vhost, user, {
      configure: '^$',
      write: '^$',
      read: `^${escapeRegExp(appId)}:`,
    })
    try {
      await this.declareQueue(q)
    } catch (e) {
      if (isPreconditionFailed(e))
        throw new GatewayError(40900, `A queue named "${q.name}" exists in the broker with other settings`)
      throw e
    }
    this.deleted.delete(q.name)
    if (this.declaredOn === this.conn.generation) this.declared.add(q.name)
  }

  private async removeQueue(q: BrokerQueue): Promise<void> {
    const model = await this.conn.connected(5000)
    this.deleted.add(q.name)
    if (this.deleted.size > MAX_DELETED) this.deleted.delete(this.deleted.values().next().value!)
    this.declared.delete(q.name)
    const ch = await model.createChannel()
    ch.on('error', () => {})
    try {
      await ch.deleteQueue(q.name)
    } catch (e) {
      // older brokers answer 404 for a queue that is gone already
      if ((e as { code?: unknown })?.code !== 404) throw e
    } finally {
      await ch.close().catch(() => {})
    }
  }

  removeConsumer(appId: string): Promise<void> {
    return this.reported(this.mgmt.deleteUser(consumerUser(appId)))
  }

  async consumerUri(appId: string): Promise<string> {
    const u = new URL(this.s.publicUrl)
    u.username = encodeURIComponent(consumerUser(appId))
    u.password = encodeURIComponent(consumerPassword(await this.secret(), appId))
    return u.toString()
  }

  async counts(q: BrokerQueue): Promise<{ ready: number; unacknowledged: number; total: number }> {
    try {
      return (await this.mgmt.queue(this.s.vhost, q.name)) ?? { ready: 0, unacknowledged: 0, total: 0 }
    } catch (e) {
      this.onError(e)
      return { ready: 0, unacknowledged: 0, total: 0 }
    }
  }

  /** Stops taking messages, waits up to `ms` for those held to be confirmed, then disconnects. */
  async close(ms = 2000): Promise<void> {
    this.closed = true
    const until = Date.now() + ms
    while (this.size() > 0 && this.conn.publisher() && Date.now() < until) await sleep(20)
    this.untrack()
    clearTimeout(this.retryTimer)
    await this.conn.close()
  }
}
