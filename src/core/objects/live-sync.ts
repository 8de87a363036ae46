/**
 * The OBJECT_SYNC of a channel's objects in pages bounded in bytes: a page holds ObjectMessages
 * up to `budget` bytes (the hosted sync splits by the message size too: ably-js's "partial
 * OBJECT_SYNC" test expects a page per large key), and a map larger than that is split over
 * several ObjectMessages of the same object (RTO5f: each with the same envelope, a key in one of
 * them, the create only in the first, which is the one the client keeps).
 */
import { dataSize } from './live-size'
import { syncMessage } from './live-state'
import type { LiveObjectRecord, MapEntry } from './ports'

/** ObjectMessages a page holds at most, whatever their size. */
export const SYNC_PAGE_OBJECTS = 100

/** What an entry adds to a page: its key and value (live-size.ts) and what its wire form carries besides (serial, flags). */
const entryCost = (key: string, e: MapEntry) => key.length + dataSize(e.data) + 48 + (e.timeserial?.length ?? 0)
/** What an ObjectMessage's envelope adds (id, serials, type). */
const ENVELOPE = 160

/** The ObjectMessages of one object, each at most `budget` bytes unless one entry alone is larger. */
export function syncStates(
  rec: LiveObjectRecord,
  siteCode: string,
  budget: number,
): Array<{ m: object; cost: number }> {
  const whole = syncMessage(rec, siteCode) as { object: { map?: { entries: Record<string, MapEntry> } } }
  const map = whole.object.map
  let createCost = 0
  for (const [k, e] of Object.entries(rec.createEntries ?? {})) createCost += entryCost(k, e)
  if (!map) return [{ m: whole, cost: ENVELOPE }]
  const out: Array<{ m: object; cost: number }> = []
  let part: Record<string, MapEntry> = {}
  let cost = ENVELOPE + createCost
  let n = 0
  const flush = () => {
    const first = out.length === 0
    const object: Record<string, unknown> = { ...whole.object, map: { ...map, entries: part } }
    if (!first) delete object.createOp
    out.push({ m: { ...whole, object }, cost })
    part = {}
    cost = ENVELOPE
    n = 0
  }
  for (const [k, e] of Object.entries(map.entries)) {
    const c = entryCost(k, e)
    if (n > 0 && cost + c > budget) flush()
    part[k] = e
    cost += c
    n++
  }
  if (n > 0 || out.length === 0) flush()
  return out
}

/**
 * The pages of a snapshot (`root` first): ObjectMessages until the next would pass `budget`
 * bytes or SYNC_PAGE_OBJECTS messages; a message larger than the budget has a page of its own.
 * Always at least one page (a sync must end).
 */
export function syncPages(records: LiveObjectRecord[], siteCode: string, budget: number): object[][] {
  const pages: object[][] = []
  let page: object[] = []
  let cost = 0
  for (const rec of records)
    for (const s of syncStates(rec, siteCode, budget)) {
      if (page.length > 0 && (cost + s.cost > budget || page.length >= SYNC_PAGE_OBJECTS)) {
        pages.push(page)
        page = []
        cost = 0
      }
      page.push(s.m)
      cost += s.cost
    }
  if (page.length > 0 || pages.length === 0) pages.push(page)
  return pages
}
