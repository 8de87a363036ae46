import { GatewayError } from '../../errors'
import { decimalInteger } from '../../lib/decimal'
import type { Direction, HistoryQuery } from '../../core/types'
import type { StatsUnit } from '../../core/ports'
import type { StatsQuery } from '../../core/stats/stats-service'
import { STATS_UNITS, parseTime } from '../../core/stats/intervals'
import { parseSerial, serialAfter } from '../../core/model/serial'

/**
 * Query parameters of the REST interfaces: their parsing (their schemas are in `api/schemas.ts`).
 * Values stay strings in the schemas (bounded in length); the routes parse them here so that bad
 * values get the spec's 40003 errors.
 */
export type Q = Readonly<Record<string, string | undefined>>

export const NO_QUERY: Q = Object.freeze({})

/** The query parameters of a request as its URL has them (the last of repeated ones); no URL parsing without a `?`. */
export const queryOf = (request: Request): Q => queryOfUrl(request.url)

/** The query parameters of a request URL (`queryOf`), for a caller that has read the URL already. */
export function queryOfUrl(url: string): Q {
  const q = url.indexOf('?')
  if (q === -1) return NO_QUERY
  const hash = url.indexOf('#', q)
  return Object.fromEntries(new URLSearchParams(hash === -1 ? url.slice(q + 1) : url.slice(q + 1, hash)))
}

/** The page size of every paginated route when the query names none. */
export const DEFAULT_PAGE_LIMIT = 100

/** Integer query parameter within [min, max]; `def` when absent; 40003 otherwise. */
export function intParam(q: Q, name: string, def: number, min: number, max: number): number {
  const raw = q[name]
  if (raw === undefined || raw === '') return def
  const n = decimalInteger(raw) // plain digits: Number() would read "0x10" as 16
  if (n === undefined || n < min || n > max)
    throw new GatewayError(40003, `Invalid ${name} param: must be an integer from ${min} to ${max}`)
  return n
}

export function directionParam(q: Q): Direction {
  const d = q.direction ?? 'backwards'
  if (d !== 'forwards' && d !== 'backwards')
    throw new GatewayError(40003, 'Invalid direction param: must be forwards or backwards')
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
export function historyQuery(q: Q, maxLimit = 1000, defLimit = DEFAULT_PAGE_LIMIT): HistoryQuery {
  const start = timeParam(q, 'start')
  const end = timeParam(q, 'end')
  if (start !== undefined && end !== undefined && start > end)
    throw new GatewayError(40003, 'Invalid params: start must not be after end')
  return {
    start,
    end,
    limit: intParam(q, 'limit', defLimit, 1, maxLimit),
    direction: directionParam(q),
    cursor: q.cursor || undefined,
  }
}

/**
 * `from_serial` of a channel history query, as the official client sends it for
 * `history({untilAttach: true})` (the channel's attach serial): history up to and including that
 * serial, newest first. Only backwards, as the hosted service allows; a page cursor wins (the
 * next pages of such a query carry both).
 */
export function untilSerial(hq: HistoryQuery, raw: string | undefined): HistoryQuery {
  if (!raw || hq.cursor) return hq
  const serial = parseSerial(raw)
  if (!serial) throw new GatewayError(40003, 'Invalid from_serial param: not a channel serial')
  if (hq.direction !== 'backwards')
    throw new GatewayError(40003, 'Invalid params: from_serial (untilAttach) needs direction backwards')
  // the cursor is exclusive: start just after the serial so that it is included
  return { ...hq, cursor: serialAfter(serial) }
}

/** unit (or `by`) / start / end / limit / direction / cursor of a stats query. */
export function statsQuery(q: Q, now: number): StatsQuery {
  const unit = (q.unit ?? (q.by || 'minute')) as StatsUnit
  if (!STATS_UNITS.includes(unit))
    throw new GatewayError(40003, 'Invalid unit param: must be minute, hour, day or month')
  const h = historyQuery(q)
  const cursor = q.cursor ? Number(q.cursor) : undefined
  if (cursor !== undefined && !Number.isInteger(cursor)) throw new GatewayError(40003, 'Invalid cursor param')
  return { unit, start: h.start ?? 0, end: h.end ?? now, limit: h.limit, direction: h.direction, cursor }
}
