import { GatewayError } from '../errors'
import type { Direction, HistoryQuery } from '../core/types'
import type { StatsUnit } from '../core/ports'
import type { StatsQuery } from '../core/stats/stats-service'
import { STATS_UNITS, parseTime } from '../core/stats/intervals'

type Q = Record<string, string | undefined>

/** Integer query parameter within [min, max]; `def` when absent; 40003 otherwise. */
export function intParam(q: Q, name: string, def: number, min: number, max: number): number {
  const raw = q[name]
  if (raw === undefined || raw === '') return def
  const n = Number(raw)
  if (!Number.isInteger(n) || n < min || n > max) throw new GatewayError(40003, `Invalid ${name} param: must be an integer from ${min} to ${max}`)
  return n
}

export function directionParam(q: Q): Direction {
  const d = q.direction ?? 'backwards'
  if (d !== 'forwards' && d !== 'backwards') throw new GatewayError(40003, 'Invalid direction param: must be forwards or backwards')
  return d
}

function timeParam(q: Q, name: 'start' | 'end'): number | undefined {
  const raw = q[name]
  if (raw === undefined || raw === '') return undefined
  const t = parseTime(raw)
  if (t === undefined) throw new GatewayError(40003, `Invalid ${name} param: must be milliseconds since epoch`)
  return t
}

/** start / end / limit / direction / cursor of a history-style query. */
export function historyQuery(q: Q, maxLimit = 1000, defLimit = 100): HistoryQuery {
  const start = timeParam(q, 'start')
  const end = timeParam(q, 'end')
  if (start !== undefined && end !== undefined && start > end) throw new GatewayError(40003, 'Invalid params: start must not be after end')
  return { start, end, limit: intParam(q, 'limit', defLimit, 1, maxLimit), direction: directionParam(q), cursor: q.cursor || undefined }
}

/** Never echoed into links: page position is replaced, credentials are never repeated. */
const LINK_EXCLUDED = new Set(['cursor', 'rnd', 'envelope', 'key', 'accessToken', 'access_token'])

/**
 * Pagination links in the only form the client libraries follow: `./<segment>?<query>`, commas
 * percent-encoded. `next` is present only when there is a next page.
 */
export function pageLinks(segment: string, q: Q, next: Record<string, string> | undefined): Record<string, string> {
  const base: Record<string, string> = {}
  for (const [k, v] of Object.entries(q)) if (v !== undefined && !LINK_EXCLUDED.has(k)) base[k] = v
  const url = (extra: Record<string, string>) => `./${segment}?${new URLSearchParams({ ...base, ...extra }).toString()}`
  const links: Record<string, string> = { first: url({}), current: url(q.cursor ? { cursor: q.cursor } : {}) }
  if (next) links.next = url(next)
  return links
}

/** unit (or `by`) / start / end / limit / direction / cursor of a stats query. */
export function statsQuery(q: Q, now: number): StatsQuery {
  const unit = (q.unit ?? (q.by || 'minute')) as StatsUnit
  if (!STATS_UNITS.includes(unit)) throw new GatewayError(40003, 'Invalid unit param: must be minute, hour, day or month')
  const h = historyQuery(q)
  const cursor = q.cursor ? Number(q.cursor) : undefined
  if (cursor !== undefined && !Number.isInteger(cursor)) throw new GatewayError(40003, 'Invalid cursor param')
  return { unit, start: h.start ?? 0, end: h.end ?? now, limit: h.limit, direction: h.direction, cursor }
}

/**
 * The page of a `limit + 1` query: the first `limit` items, and the `next` cursor (the page's last
 * position) when one more item showed there is a next page.
 */
export function pageOf<T>(items: T[], limit: number, position: (item: T) => string): { page: T[]; next?: Record<string, string> } {
  const page = items.slice(0, limit)
  return { page, next: items.length > limit ? { cursor: position(page[page.length - 1]!) } : undefined }
}
