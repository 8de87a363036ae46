import type { HistoryQuery, PresenceMessage } from '../../core/types'

/** One page of presence history (oldest first as stored): time bounds, direction, cursor (an event id), limit. */
export function presenceHistoryPage(stored: PresenceMessage[], q: HistoryQuery): PresenceMessage[] {
  const inRange = stored.filter(
    (e) => (q.start === undefined || e.timestamp >= q.start) && (q.end === undefined || e.timestamp <= q.end),
  )
  const ordered = q.direction === 'forwards' ? inRange : inRange.reverse()
  const from = q.cursor === undefined ? 0 : ordered.findIndex((e) => e.id === q.cursor) + 1
  return ordered.slice(from, from + q.limit)
}
