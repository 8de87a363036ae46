import type { BrokerQueue, QueueBroker, QueueOutcome } from '../../core/ports'
import { GatewayError } from '../../errors'
import { hmacSha256 } from '../../lib/crypto'
import { metrics } from '../../lib/metrics'
import { sleep } from '../../lib/sleep'
import { AppLane, isPreconditionFailed, type DropReason, type LaneEvents } from './app-lane'
import { BufferBudget } from './buffer-budget'
import { AmqpConnection } from './connection'
import { moveLegacyQueues } from './legacy-layout'
import type { RabbitManagement } from './management'
import { appVhost, consumerPermissions, consumerUser } from './naming'

const deliveries = metrics.counter(
  'gateway_queue_deliveries_total',
  'Queue (AMQP) messages by outcome: delivered (confirmed by the broker), retried (broker unreachable or refused: sent again).',
)
const dropped = metrics.counter(
  'gateway_queue_dropped_total',
  "Queue (AMQP) messages given up, by reason: full (this node's buffer, the account holding the most of it), expired (older than the queue's ttl), deleted (queue or app deleted), stopped (node stopped).",
)
const DELIVERED = { outcome: 'delivered' }
const RETRIED = { outcome: 'retried' }
const REASONS = Object.fromEntries(
  (['full', 'expired', 'deleted', 'stopped'] as const).map((r) => [r, { reason: r }]),
) as Record<DropReason, { reason: DropReason }>

/** Apps deleted (or found deleted) remembered, so a late message does not make their vhost again. */
const MAX_REMOVED = 10_000
/** Pause before the move of an earlier layout's queues is tried again. */
const MIGRATE_RETRY_MS = 30_000

export interface AmqpBrokerSettings {
  /** AMQP_URL (with its heartbeat): its user publishes; its vhost is where earlier versions kept every app's queues. */
  url: string
  /** `scheme://host:port` that consumers are told to connect to (the app's vhost is added). */
  publicUrl: string
  /** Messages held at most on this node (waiting, being retried, or published and not confirmed). */
  bufferMessages: number
  /** An app's connection with nothing held is closed after this long without a message. */
  idleMs: number
  /** This deployment's queues of an app (undefined: the app is not this deployment's). */
  appQueues(appId: string): Promise<BrokerQueue[] | undefined>
}

/** Every node derives the same password from the store's secret: nothing to store or share. */
const consumerPassword = (secret: string, appId: string) => hmacSha256(secret, `amqp-consumer:${appId}`, 'base64url')

/**
 * App queues in RabbitMQ, each app in a vhost of its own (`app.<appId>`) reached by a connection
 * of its own (an AppLane), opened when the app has something to send and closed once idle. The
 * node's buffer is shared fairly between accounts (BufferBudget). At start, what an earlier
 * version left in AMQP_URL's shared vhost is moved into the apps' vhosts (legacy-layout.ts).
 */
export class AmqpQueueBroker implements QueueBroker {
  private readonly lanes = new Map<string, AppLane>()
  private readonly budget: BufferBudget
  private readonly removed = new Set<string>()
  private readonly observers: QueueOutcome[] = []
  private readonly events: LaneEvents
  private readonly user: string
  private sweeper?: ReturnType<typeof setInterval>
  private closed = false
  private readonly untrack: () => void
  /** While it runs, a consumer user missing is one it is making again, not a deleted app's. */
  private migrating = true

  constructor(
    private readonly mgmt: RabbitManagement,
    private readonly secret: () => Promise<string>,
    private readonly s: AmqpBrokerSettings,
    private readonly onError: (e: unknown) => void,
  ) {
    this.budget = new BufferBudget(s.bufferMessages)
    this.user = decodeURIComponent(new URL(s.url).username) || 'guest'
    this.events = {
      delivered: (lane, n) => {
        deliveries.inc(DELIVERED, n)
        this.report(lane.appId, lane.share?.id ?? '', 'delivered', n)
      },
      dropped: (lane, reason) => {
        dropped.inc(REASONS[reason])
        this.report(lane.appId, lane.share?.id ?? '', 'dropped', 1)
      },
      retried: () => deliveries.inc(RETRIED),
      error: onError,
    }
    this.untrack = metrics.gauge('gateway_queue_buffered', 'Queue (AMQP) messages this node holds unconfirmed.', () =>
      this.size(),
    )
    // what an earlier layout left is moved once per start
    void this.migrate()
  }

  /** Messages held: waiting, to be retried, or published and not yet confirmed. */
  size(): number {
    return this.budget.held
  }

  observe(listener: QueueOutcome): void {
    this.observers.push(listener)
  }

  private report(appId: string, accountId: string, outcome: 'delivered' | 'dropped', n: number) {
    for (const o of this.observers) o(appId, accountId, outcome, n)
  }

  send(
    queue: BrokerQueue,
    body: string,
    props: { accountId: string; messageId: string; headers: Record<string, string> },
  ): void {
    if (this.closed || this.removed.has(queue.appId)) {
      dropped.inc(REASONS[this.closed ? 'stopped' : 'deleted'])
      this.report(queue.appId, props.accountId, 'dropped', 1)
      return
    }
    const lane = this.lane(queue.appId)
    lane.push(lane.share ?? this.budget.join(props.accountId, lane), queue, body, props)
  }

  /** The app's lane, made (with its connection) when it has none. */
  private lane(appId: string): AppLane {
    let lane = this.lanes.get(appId)
    if (lane) return lane
    const vhost = appVhost(appId)
    const url = new URL(this.s.url)
    url.pathname = '/' + encodeURIComponent(vhost)
    const conn = new AmqpConnection(
      url.toString(),
      () => this.lanes.get(appId)?.pump(),
      this.onError,
      () => this.prepare(appId),
    )
    lane = new AppLane(appId, conn, this.budget, this.events)
    this.lanes.set(appId, lane)
    this.sweeper ??= setInterval(() => this.sweep(), Math.min(this.s.idleMs, 10_000))
    this.sweeper.unref?.()
    return lane
  }

  /**
   * Before each connection of a lane: the app's vhost exists and the gateway's user may use it.
   * Made only while the app's consumer user exists: a lane of an app deleted meanwhile (by
   * another node, or with the broker's data) makes nothing readable again; it is closed.
   */
  private async prepare(appId: string): Promise<void> {
    if (!(await this.mgmt.userExists(consumerUser(appId)))) {
      if (!this.migrating) void this.retire(appId)
      throw new Error(`RabbitMQ has no consumer user for app ${appId} (app deleted): its queue messages are dropped`)
    }
    await this.ensureVhost(appVhost(appId))
  }

  private async ensureVhost(vhost: string): Promise<void> {
    await this.mgmt.putVhost(vhost)
    // the management API's user is given every permission in a vhost it makes; AMQP_URL's user may be another
    if (this.user !== this.mgmt.user) await this.mgmt.setPermissions(vhost, this.user, ALL)
  }

  private async retire(appId: string, reason: DropReason = 'deleted'): Promise<void> {
    if (reason === 'deleted') {
      this.removed.add(appId)
      if (this.removed.size > MAX_REMOVED) this.removed.delete(this.removed.values().next().value!)
    }
    const lane = this.lanes.get(appId)
    if (!lane) return
    this.lanes.delete(appId)
    await lane.close(reason)
  }

  /** Closes the lanes that hold nothing and were not used for `idleMs`. */
  private sweep() {
    const now = Date.now()
    for (const [appId, lane] of this.lanes)
      if (lane.held() === 0 && lane.busy === 0 && now - lane.lastUsed >= this.s.idleMs) {
        this.lanes.delete(appId)
        void lane.close('deleted').catch(this.onError)
      }
    if (this.lanes.size === 0) {
      clearInterval(this.sweeper)
      this.sweeper = undefined
    }
  }

  /** Runs `f` on the app's lane, kept open meanwhile. */
  private async onLane<T>(appId: string, f: (lane: AppLane) => Promise<T>): Promise<T> {
    const lane = this.lane(appId)
    lane.busy++
    lane.lastUsed = Date.now()
    try {
      return await f(lane)
    } finally {
      lane.busy--
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
    return this.reported(this.onLane(q.appId, (lane) => lane.removeQueue(q)))
  }

  /** The app's consumer user, its vhost, and its permission there (read its queues, nothing else). */
  private async provision(appId: string): Promise<void> {
    const user = consumerUser(appId)
    await this.mgmt.putUser(user, consumerPassword(await this.secret(), appId))
    await this.ensureVhost(appVhost(appId))
    await this.mgmt.setPermissions(appVhost(appId), user, consumerPermissions(appId))
  }

  private async declareWithUser(q: BrokerQueue): Promise<void> {
    await this.provision(q.appId)
    this.removed.delete(q.appId)
    await this.onLane(q.appId, async (lane) => {
      try {
        await lane.declareQueue(q)
      } catch (e) {
        if (isPreconditionFailed(e))
          throw new GatewayError(40900, `A queue named "${q.name}" exists in the broker with other settings`)
        throw e
      }
    })
  }

  /** Deletes the app's consumer user (closing its connections) and its vhost with every queue in it. */
  removeConsumer(appId: string): Promise<void> {
    return this.reported(
      (async () => {
        await this.mgmt.deleteUser(consumerUser(appId))
        await this.mgmt.deleteVhost(appVhost(appId))
        await this.retire(appId)
      })(),
    )
  }

  async consumerUri(appId: string): Promise<string> {
    const u = new URL(this.s.publicUrl)
    u.username = encodeURIComponent(consumerUser(appId))
    u.password = encodeURIComponent(consumerPassword(await this.secret(), appId))
    u.pathname = '/' + encodeURIComponent(appVhost(appId))
    return u.toString()
  }

  async counts(q: BrokerQueue): Promise<{ ready: number; unacknowledged: number; total: number }> {
    try {
      return (await this.mgmt.queue(appVhost(q.appId), q.name)) ?? { ready: 0, unacknowledged: 0, total: 0 }
    } catch (e) {
      this.onError(e)
      return { ready: 0, unacknowledged: 0, total: 0 }
    }
  }

  /** Moves what an earlier version left in AMQP_URL's vhost, retried until done (or stopped). */
  private async migrate(): Promise<void> {
    const base = new URL(this.s.url)
    while (!this.closed) {
      this.migrating = true
      try {
        await moveLegacyQueues({
          mgmt: this.mgmt,
          baseUrl: this.s.url,
          baseVhost: decodeURIComponent(base.pathname.slice(1)) || '/',
          appQueues: this.s.appQueues,
          provision: (appId) => this.provision(appId),
          onLane: (appId, f) => this.onLane(appId, f),
          onError: this.onError,
        })
        return
      } catch (e) {
        this.onError(e)
      } finally {
        this.migrating = false
      }
      for (let waited = 0; waited < MIGRATE_RETRY_MS && !this.closed; waited += 500) await sleep(500)
    }
  }

  /** Stops taking messages, waits up to `ms` for those held to be confirmed, then disconnects. */
  async close(ms = 2000): Promise<void> {
    this.closed = true
    const until = Date.now() + ms
    while (this.size() > 0 && [...this.lanes.values()].some((l) => l.conn.publisher()) && Date.now() < until)
      await sleep(20)
    this.untrack()
    clearInterval(this.sweeper)
    await Promise.all([...this.lanes.keys()].map((appId) => this.retire(appId, 'stopped')))
  }
}

const ALL = { configure: '.*', write: '.*', read: '.*' }
