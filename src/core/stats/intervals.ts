import type { StatsUnit } from '../ports'

const pad = (n: number) => String(n).padStart(2, '0')

/** Start (ms, UTC) of the interval of `unit` that contains `t`. */
export function intervalStart(unit: StatsUnit, t: number): number {
  const d = new Date(t)
  switch (unit) {
    case 'minute':
      return t - (t % 60_000)
    case 'hour':
      return t - (t % 3_600_000)
    case 'day':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate())
    case 'month':
      return Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1)
  }
}

/** Interval id as the hosted service writes it: minute yyyy-mm-dd:hh:mm, hour yyyy-mm-dd:hh, day yyyy-mm-dd:00, month yyyy-mm-01:00. */
export function intervalId(unit: StatsUnit, start: number): string {
  const d = new Date(start)
  const day = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`
  switch (unit) {
    case 'minute':
      return `${day}:${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`
    case 'hour':
      return `${day}:${pad(d.getUTCHours())}`
    case 'day':
      return `${day}:00`
    case 'month':
      return `${day.slice(0, 8)}01:00`
  }
}

/**
 * Parses epoch ms or an interval id (`yyyy-mm-dd:hh:mm`, `yyyy-mm-dd:hh`, `yyyy-mm-dd`, `yyyy-mm`),
 * as UTC; undefined if neither.
 */
export function parseTime(v: string): number | undefined {
  if (/^\d+$/.test(v)) return Number(v)
  const m = /^(\d{4})-(\d{2})(?:-(\d{2})(?::(\d{2})(?::(\d{2}))?)?)?$/.exec(v)
  if (!m) return undefined
  return Date.UTC(+m[1]!, +m[2]! - 1, +(m[3] ?? 1), +(m[4] ?? 0), +(m[5] ?? 0))
}

export const STATS_UNITS: StatsUnit[] = ['minute', 'hour', 'day', 'month']
