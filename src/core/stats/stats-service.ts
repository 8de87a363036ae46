import type { Clock, StatsStore, StatsUnit } from '../ports'
import { withTotals } from './entries'
import { intervalId, intervalStart } from './intervals'

export const STATS_SCHEMA = 'https://schemas.ably.com/json/app-stats-0.0.5.json'

export interface StatsView {
  intervalId: string
  unit: StatsUnit
  schema: string
  appId?: string
  inProgress?: string
  entries: Record<string, number>
}

interface Pending {
  accountId: string
  minute: number
  inCount: number
  inBytes: number
  /** Of inCount/inBytes: what came over realtime connections. */
  realtimeCount: number
  realtimeBytes: number
  /** Presence events entered over realtime connections. */
  presenceCount: number
  persistedCount: number
  persistedBytes: number
  outCount: number
  /** Messages delivered to webhooks, and given up (dropped) on the way. */
  webhookCount: number
  webhookFailed: number
  /** Messages confirmed into app queues on the broker, and given up on the way. */
  queueCount: number
  queueFailed: number
  tokenRequests: number
  apiRequests: number
  connectionsOpened: number
  /** Most event-stream connections open at once during the minute. */
  connectionsPeak: number
}

/**
 * Counts real traffic into the flattened `entries` of the hosted service's stats schema.
 * Traffic is summed per app and minute in a few numbers and written to the store when the minute
 * changes or stats are read, so the publish and delivery paths do no map work per entry.
 */
export class StatsService {
  private pending = new Map<string, Pending>()
  /** Event-stream connections open now, per app. */
  private open = new Map<string, number>()

  constructor(
    private readonly store: StatsStore,
    private readonly clock: Clock,
  ) {}

  private add(appId: string, accountId: string, entries: Record<string, number>, at = this.clock.now()) {
    this.store.add([appId, `account:${accountId}`], at, entries)
  }

  /** The app's sums of the current minute (the previous minute's are written out first). */
  private current(appId: string, accountId: string, now = this.clock.now()): Pending {
    const minute = now - (now % 60_000)
    let p = this.pending.get(appId)
    if (p && p.minute !== minute) {
      this.flushApp(appId, p)
      p = undefined
    }
    if (!p) {
      p = {
        accountId,
        minute,
        inCount: 0,
        inBytes: 0,
        realtimeCount: 0,
        realtimeBytes: 0,
        presenceCount: 0,
        persistedCount: 0,
        persistedBytes: 0,
        outCount: 0,
        webhookCount: 0,
        webhookFailed: 0,
        queueCount: 0,
        queueFailed: 0,
        tokenRequests: 0,
        apiRequests: 0,
        connectionsOpened: 0,
        connectionsPeak: this.open.get(appId) ?? 0,
      }
      this.pending.set(appId, p)
    }
    return p
  }

  messagesPublished(
    appId: string,
    accountId: string,
    count: number,
    bytes: number,
    persisted: boolean,
    transport: 'rest' | 'realtime' = 'rest',
    /** When they were published (ms), where the caller knows it: no clock read here then. */
    at?: number,
  ) {
    const p = this.current(appId, accountId, at)
    p.inCount += count
    p.inBytes += bytes
    if (transport === 'realtime') {
      p.realtimeCount += count
      p.realtimeBytes += bytes
    }
    if (persisted) {
      p.persistedCount += count
      p.persistedBytes += bytes
    }
  }

  /** Presence events a client sent (enter, update, leave). */
  presencePublished(appId: string, accountId: string, count: number) {
    this.current(appId, accountId).presenceCount += count
  }

  /** Messages written to event-stream subscribers. */
  messagesDelivered(appId: string, accountId: string, count: number) {
    this.current(appId, accountId).outCount += count
  }

  /** Messages a webhook rule delivered. */
  webhookDelivered(appId: string, accountId: string, count: number) {
    this.current(appId, accountId).webhookCount += count
  }

  /** Messages a webhook rule gave up (buffer full, retries exhausted, refused, rule deleted). */
  webhookDropped(appId: string, accountId: string, count: number) {
    this.current(appId, accountId).webhookFailed += count
  }

  /** Messages an amqp rule's queue took (the broker confirmed them). */
  queueDelivered(appId: string, accountId: string, count: number) {
    this.current(appId, accountId).queueCount += count
  }

  /** Messages an amqp rule gave up (the node's buffer full, ttl passed waiting, queue or app deleted). */
  queueDropped(appId: string, accountId: string, count: number) {
    this.current(appId, accountId).queueFailed += count
  }

  tokenRequestSucceeded(appId: string, accountId: string) {
    this.current(appId, accountId).tokenRequests++
  }

  /** An authenticated REST request (any interface of `{base_url}`). */
  apiRequest(appId: string, accountId: string) {
    this.current(appId, accountId).apiRequests++
  }

  connectionOpened(appId: string, accountId: string) {
    const n = (this.open.get(appId) ?? 0) + 1
    this.open.set(appId, n)
    const p = this.current(appId, accountId)
    p.connectionsOpened++
    if (n > p.connectionsPeak) p.connectionsPeak = n
  }

  connectionClosed(appId: string) {
    const n = (this.open.get(appId) ?? 1) - 1
    if (n > 0) this.open.set(appId, n)
    else this.open.delete(appId)
  }

  /** Writes the app's sums as schema entries: the per-transport counts, with the `all` totals derived from them. */
  private flushApp(appId: string, p: Pending) {
    this.pending.delete(appId)
    const e: Record<string, number> = {}
    const put = (key: string, value: number) => {
      if (value) e[key] = value
    }
    put('messages.inbound.rest.messages.count', p.inCount - p.realtimeCount)
    put('messages.inbound.rest.messages.data', p.inBytes - p.realtimeBytes)
    put('messages.inbound.realtime.messages.count', p.realtimeCount)
    put('messages.inbound.realtime.messages.data', p.realtimeBytes)
    put('messages.inbound.realtime.presence.count', p.presenceCount)
    put('messages.outbound.realtime.messages.count', p.outCount)
    put('messages.outbound.webhook.messages.count', p.webhookCount)
    put('messages.outbound.webhook.messages.failed', p.webhookFailed)
    put('messages.outbound.sharedQueue.messages.count', p.queueCount)
    put('messages.outbound.sharedQueue.messages.failed', p.queueFailed)
    put('messages.persisted.messages.count', p.persistedCount)
    put('messages.persisted.messages.data', p.persistedBytes)
    put('apiRequests.tokenRequests.succeeded', p.tokenRequests)
    put('apiRequests.other.succeeded', p.apiRequests)
    put('apiRequests.all.succeeded', p.tokenRequests + p.apiRequests)
    put('connections.all.opened', p.connectionsOpened)
    put('connections.all.peak', p.connectionsPeak)
    if (Object.keys(e).length) this.add(appId, p.accountId, withTotals(e), p.minute)
  }

  /** Writes every pending sum to the store (before reads). */
  flush() {
    for (const [appId, p] of this.pending) this.flushApp(appId, p)
  }

  /** Adds raw entries (stats loaded through the sandbox's POST /stats). */
  load(appId: string, accountId: string, at: number, entries: Record<string, number>) {
    this.store.add([appId, `account:${accountId}`], at, entries)
  }

  /**
   * One page of stats records. `cursor` is the interval start of the previous page's last
   * record; `next` is set when another page follows.
   */
  async page(
    scope: { appId: string } | { accountId: string },
    q: StatsQuery,
  ): Promise<{ items: StatsView[]; next?: number }> {
    this.flush()
    const key = 'appId' in scope ? scope.appId : `account:${scope.accountId}`
    const fwd = q.direction === 'forwards'
    const start = q.cursor !== undefined && fwd ? q.cursor : q.start
    const end = q.cursor !== undefined && !fwd ? q.cursor - 1 : q.end
    let rows = await this.store.query(key, q.unit, start, end, q.limit + 2, q.direction)
    if (q.cursor !== undefined && fwd) rows = rows.filter((r) => r.start > q.cursor!)
    const page = rows.slice(0, q.limit)
    const current = intervalStart(q.unit, this.clock.now())
    const items = page.map((r) => {
      const v: StatsView = { intervalId: r.intervalId, unit: q.unit, schema: STATS_SCHEMA, entries: r.entries }
      if ('appId' in scope) v.appId = scope.appId
      if (r.start === current) v.inProgress = intervalId('minute', intervalStart('minute', this.clock.now()))
      return v
    })
    return { items, next: rows.length > q.limit ? page[page.length - 1]!.start : undefined }
  }
}

export interface StatsQuery {
  unit: StatsUnit
  start: number
  end: number
  limit: number
  direction: 'forwards' | 'backwards'
  cursor?: number
}
