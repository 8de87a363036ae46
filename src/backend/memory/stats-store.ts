import type { Clock, StatsRecord, StatsStore, StatsUnit } from '../../core/ports'
import { STATS_UNITS, intervalId, intervalStart } from '../../core/stats/intervals'

const MINUTE_RETENTION_MS = 48 * 3_600_000
type Buckets = Map<number, Record<string, number>>

/** Counters add up; `*.peak` entries keep the highest value. */
const addInto = (target: Record<string, number>, entries: Record<string, number>) => {
  for (const k in entries)
    target[k] = k.endsWith('.peak') ? Math.max(target[k] ?? 0, entries[k]!) : (target[k] ?? 0) + entries[k]!
}

interface Scope {
  units: Record<StatsUnit, Buckets>
  foldedUpTo: number
  /** When each minute bucket was last written (ms): a bucket is kept 48 h from then. */
  written: Map<number, number>
}

/**
 * Stats counters in memory. Writes touch only the minute bucket (cheap on the publish path);
 * complete minutes are folded into hour/day/month buckets lazily. A minute bucket is dropped 48 h
 * after it was last written, whatever interval it counts: records loaded for the past (the
 * sandbox's POST /stats) stay queryable at any age, and memory still follows recent writes only.
 */
export class MemoryStatsStore implements StatsStore {
  private scopes = new Map<string, Scope>()

  constructor(private readonly clock: Clock) {}

  private scope(name: string): Scope {
    let s = this.scopes.get(name)
    if (!s) {
      const units = { minute: new Map(), hour: new Map(), day: new Map(), month: new Map() }
      s = { units, foldedUpTo: 0, written: new Map() }
      this.scopes.set(name, s)
    }
    return s
  }

  add(scopes: string[], at: number, entries: Record<string, number>): void {
    const minute = intervalStart('minute', at)
    const now = this.clock.now()
    for (const name of scopes) {
      const s = this.scope(name)
      if (minute < s.foldedUpTo) {
        // a late record for an already folded minute (stats loaded for the past): add everywhere
        for (const u of STATS_UNITS) addInto(bucket(s.units[u], intervalStart(u, at)), entries)
      } else addInto(bucket(s.units.minute, minute), entries)
      s.written.set(minute, now)
    }
  }

  private fold(s: Scope, now: number) {
    const current = intervalStart('minute', now)
    for (const [start, entries] of s.units.minute) {
      if (start >= s.foldedUpTo && start < current) {
        for (const u of ['hour', 'day', 'month'] as const) addInto(bucket(s.units[u], intervalStart(u, start)), entries)
      }
      if ((s.written.get(start) ?? start) < now - MINUTE_RETENTION_MS) {
        s.units.minute.delete(start)
        s.written.delete(start)
      }
    }
    s.foldedUpTo = Math.max(s.foldedUpTo, current)
  }

  async query(
    name: string,
    unit: StatsUnit,
    start: number,
    end: number,
    limit: number,
    direction: 'forwards' | 'backwards',
  ): Promise<StatsRecord[]> {
    const s = this.scopes.get(name)
    if (!s) return []
    this.fold(s, this.clock.now())
    const merged: Buckets = new Map([...s.units[unit]].map(([k, v]) => [k, { ...v }]))
    if (unit !== 'minute') {
      for (const [m, entries] of s.units.minute)
        if (m >= s.foldedUpTo) addInto(bucket(merged, intervalStart(unit, m)), entries)
    }
    const from = intervalStart(unit, start)
    const rows = [...merged]
      .filter(([k]) => k >= from && k <= end)
      .sort((a, b) => (direction === 'forwards' ? a[0] - b[0] : b[0] - a[0]))
    return rows
      .slice(0, limit)
      .map(([k, entries]) => ({ intervalId: intervalId(unit, k), unit, start: k, entries: sparse(entries) }))
  }
}

function bucket(m: Buckets, k: number): Record<string, number> {
  let b = m.get(k)
  if (!b) m.set(k, (b = {}))
  return b
}

const sparse = (e: Record<string, number>) => Object.fromEntries(Object.entries(e).filter(([, v]) => v !== 0))
