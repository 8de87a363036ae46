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

/** Counts real traffic into the flattened `entries` of the hosted service's stats schema. */
export class StatsService {
  constructor(private readonly store: StatsStore, private readonly clock: Clock) {}

  private add(appId: string, accountId: string, entries: Record<string, number>) {
    this.store.add([appId, `account:${accountId}`], this.clock.now(), entries)
  }

  messagesPublished(appId: string, accountId: string, count: number, bytes: number, persisted: boolean) {
    const e: Record<string, number> = {
      'messages.all.all.count': count, 'messages.all.all.data': bytes,
      'messages.all.messages.count': count, 'messages.all.messages.data': bytes,
      'messages.inbound.rest.all.count': count, 'messages.inbound.rest.all.data': bytes,
      'messages.inbound.rest.messages.count': count, 'messages.inbound.rest.messages.data': bytes,
      'messages.inbound.all.all.count': count, 'messages.inbound.all.all.data': bytes,
      'messages.inbound.all.messages.count': count, 'messages.inbound.all.messages.data': bytes,
    }
    if (persisted) {
      e['messages.persisted.all.count'] = count
      e['messages.persisted.all.data'] = bytes
      e['messages.persisted.messages.count'] = count
      e['messages.persisted.messages.data'] = bytes
    }
    this.add(appId, accountId, e)
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
