import type { Clock, StatsStore, StatsUnit } from '../ports'
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

interface PendingPublishes { accountId: string; minute: number; count: number; bytes: number; pcount: number; pbytes: number }

/**
 * Counts real traffic into the flattened `entries` of the hosted service's stats schema.
 * Publishes are summed per app and minute in a few numbers and written to the store when the
 * minute changes or stats are read, so the publish path does no map work per entry.
 */
export class StatsService {
  private pending = new Map<string, PendingPublishes>()

  constructor(private readonly store: StatsStore, private readonly clock: Clock) {}

  private add(appId: string, accountId: string, entries: Record<string, number>, at = this.clock.now()) {
    this.store.add([appId, `account:${accountId}`], at, entries)
  }

  messagesPublished(appId: string, accountId: string, count: number, bytes: number, persisted: boolean) {
    const now = this.clock.now()
    const minute = now - (now % 60_000)
    let p = this.pending.get(appId)
    if (p && p.minute !== minute) { this.flushApp(appId, p); p = undefined }
    if (!p) this.pending.set(appId, (p = { accountId, minute, count: 0, bytes: 0, pcount: 0, pbytes: 0 }))
    p.count += count
    p.bytes += bytes
    if (persisted) { p.pcount += count; p.pbytes += bytes }
  }

  private flushApp(appId: string, p: PendingPublishes) {
    this.pending.delete(appId)
    const { count, bytes, pcount, pbytes } = p
    const e: Record<string, number> = {}
    for (const k of ['messages.all.all', 'messages.all.messages', 'messages.inbound.rest.all', 'messages.inbound.rest.messages', 'messages.inbound.all.all', 'messages.inbound.all.messages']) {
      e[`${k}.count`] = count
      e[`${k}.data`] = bytes
    }
    if (pcount) {
      for (const k of ['messages.persisted.all', 'messages.persisted.messages']) {
        e[`${k}.count`] = pcount
        e[`${k}.data`] = pbytes
      }
    }
    this.add(appId, p.accountId, e, p.minute)
  }

  /** Writes every pending sum to the store (before reads). */
  flush() {
    for (const [appId, p] of this.pending) this.flushApp(appId, p)
  }

  apiRequest(appId: string, accountId: string, kind: 'tokenRequests' | 'other', outcome: 'succeeded' | 'failed' | 'refused') {
    this.add(appId, accountId, { [`apiRequests.${kind}.${outcome}`]: 1, [`apiRequests.all.${outcome}`]: 1 })
  }

  /** Adds raw entries (stats loaded through the sandbox's POST /stats). */
  load(appId: string, accountId: string, at: number, entries: Record<string, number>) {
    this.store.add([appId, `account:${accountId}`], at, entries)
  }

  /**
   * One page of stats records. `cursor` is the interval start of the previous page's last
   * record; `next` is set when another page follows.
   */
  async page(scope: { appId: string } | { accountId: string }, q: StatsQuery): Promise<{ items: StatsView[]; next?: number }> {
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
