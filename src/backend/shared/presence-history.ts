import type { HistoryQuery, PresenceMessage } from '../../core/types'

/** Presence events a channel's history keeps at most (the newest), whatever its retention window. */
export const PRESENCE_HISTORY_MAX = 1000

/**
 * One page of presence history (oldest first as stored): events from `since` (ms: the channel's
 * retention window, as message history reads it), time bounds, direction, cursor (an event id), limit.
 */
export function presenceHistoryPage(stored: PresenceMessage[], q: HistoryQuery, since: number): PresenceMessage[] {
  const from = Math.max(since, q.start ?? since)
  const inRange = stored.filter((e) => e.timestamp >= from && (q.end === undefined || e.timestamp <= q.end))
  const ordered = q.direction === 'forwards' ? inRange : inRange.reverse()
  const after = q.cursor === undefined ? 0 : ordered.findIndex((e) => e.id === q.cursor) + 1
  return ordered.slice(after, after + q.limit)
}

/** Drops the events older than `since` (ms) from a history kept oldest first. */
export function expirePresenceHistory(history: PresenceMessage[], since: number): void {
  let n = 0
  while (n < history.length && history[n]!.timestamp < since) n++
  if (n) history.splice(0, n)
}
