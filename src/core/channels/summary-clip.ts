import { utf8Length } from '../../lib/encoding'

/**
 * A message's summary kept within a size (the hosted service's "large summaries": client lists
 * clipped so that the summary stays within the message size). The summary's layout is the wire's,
 * keyed by type: a value with a client list (`flag.v1`: `{total, clientIds, clipped}`), one per
 * name (`distinct`, `unique`: `{total, clientIds: [...], clipped}`; `multiple`: `{total,
 * clientIds: {client: count}, totalClientIds, totalUnidentified, clipped}`) or a bare `{total}`.
 *
 * 1. Every client list keeps its first k clients, k the largest that fits; a list cut short says
 *    `clipped: true`. Totals (and `totalClientIds`) stay exact.
 * 2. Only when the names do not fit even with empty lists (many long names, which only a message
 *    annotated to its entry cap can have) are whole names left out, those with the smallest total
 *    first (then the last in order), until it fits; types whose value is not per name (flag,
 *    total) count as one name each.
 *
 * Sizes are bytes of the summary as JSON (UTF-8). The clipping is a function of the summary alone,
 * so every node and every read (live summaries, history, getMessage) clips the same summary alike.
 */

interface Entry {
  total: number
  clientIds: string[] | Record<string, number>
  clipped?: boolean
  [field: string]: unknown
}

/** A client list of the summary: its type, name (none for a type-level entry) and clients. */
interface Slot {
  type: string
  name?: string
  entry: Entry
  ids: string[]
  /** prefix[k]: bytes the first k clients add to an empty list. */
  prefix: number[]
}

const bytes = (v: unknown) => utf8Length(JSON.stringify(v))
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const isEntry = (v: unknown): v is Entry =>
  isObject(v) && typeof v.total === 'number' && (Array.isArray(v.clientIds) || isObject(v.clientIds))

export function clipSummary<T extends object>(summary: T, maxBytes: number): T {
  const whole = bytes(summary)
  if (whole <= maxBytes) return summary
  const slots = slotsOf(summary as Record<string, unknown>)
  // the size with every list empty: the lists' bytes off, `true` for each `false` (one byte less)
  const exact = slots.every((s) => typeof s.entry.clipped === 'boolean')
  const empty = exact
    ? slots.reduce((n, s) => n - s.prefix[s.ids.length]! - (s.ids.length > 0 && !s.entry.clipped ? 1 : 0), whole)
    : bytes(build(summary as Record<string, unknown>, slots, 0))
  if (empty <= maxBytes) {
    // the largest k whose lists fit (the size only grows with k)
    const sizeAt = (k: number) => {
      let n = empty
      for (const s of slots) {
        const kept = Math.min(k, s.ids.length)
        n += s.prefix[kept]!
        if (s.ids.length > 0 && kept === s.ids.length && !s.entry.clipped) n += 1 // `false` for `true`
      }
      return n
    }
    let lo = 0
    let hi = Math.max(0, ...slots.map((s) => s.ids.length))
    while (lo < hi) {
      const mid = Math.ceil((lo + hi) / 2)
      if (sizeAt(mid) <= maxBytes) lo = mid
      else hi = mid - 1
    }
    return build(summary as Record<string, unknown>, slots, lo) as T
  }
  return dropNames(build(summary as Record<string, unknown>, slots, 0), maxBytes) as T
}

function slotsOf(summary: Record<string, unknown>): Slot[] {
  const slots: Slot[] = []
  const add = (type: string, name: string | undefined, entry: Entry) => {
    const counts = Array.isArray(entry.clientIds) ? undefined : entry.clientIds
    const ids = counts ? Object.keys(counts) : (entry.clientIds as string[])
    const prefix = [0]
    ids.forEach((id, i) => {
      const one = bytes(id) + (counts ? 1 + bytes(counts[id]) : 0) + (i > 0 ? 1 : 0)
      prefix.push(prefix[i]! + one)
    })
    slots.push({ type, name, entry, ids, prefix })
  }
  for (const [type, value] of Object.entries(summary)) {
    if (isEntry(value)) add(type, undefined, value)
    else if (isObject(value)) for (const [name, e] of Object.entries(value)) if (isEntry(e)) add(type, name, e)
  }
  return slots
}

/** A copy of the summary whose client lists keep their first `k` clients. */
function build(summary: Record<string, unknown>, slots: Slot[], k: number): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [type, value] of Object.entries(summary))
    out[type] = isEntry(value) || !isObject(value) ? value : { ...value }
  for (const s of slots) {
    const { entry, ids } = s
    const kept = ids.slice(0, k)
    const clientIds = Array.isArray(entry.clientIds)
      ? kept
      : Object.fromEntries(kept.map((id) => [id, (entry.clientIds as Record<string, number>)[id]!]))
    const clipped = entry.clipped === true || kept.length < ids.length
    const e = { ...entry, clientIds, clipped }
    if (s.name === undefined) out[s.type] = e
    else (out[s.type] as Record<string, unknown>)[s.name] = e
  }
  return out
}

/** Leaves out whole names (smallest total first, then the last) until the summary fits. */
function dropNames(summary: Record<string, unknown>, maxBytes: number): Record<string, unknown> {
  const units: Array<{ type: string; name?: string; total: number; order: number; cost: number }> = []
  for (const [type, value] of Object.entries(summary)) {
    if (isObject(value) && !isEntry(value) && typeof value.total !== 'number') {
      for (const [name, e] of Object.entries(value))
        units.push({ type, name, total: totalOf(e), order: units.length, cost: bytes(name) + bytes(e) + 2 })
    } else units.push({ type, total: totalOf(value), order: units.length, cost: bytes(type) + bytes(value) + 2 })
  }
  units.sort((a, b) => a.total - b.total || b.order - a.order)
  let size = bytes(summary)
  for (const u of units) {
    // the estimate (each name's bytes and a comma) is checked against the real size once it fits
    if (size <= maxBytes && (size = bytes(summary)) <= maxBytes) break
    if (u.name === undefined) delete summary[u.type]
    else delete (summary[u.type] as Record<string, unknown>)[u.name]
    size -= u.cost
  }
  return summary
}

const totalOf = (v: unknown) => (isObject(v) && typeof v.total === 'number' ? v.total : 0)
