/**
 * The stored state of a channel's objects and how operations change it: the rules the plugin
 * applies (shared/reference/ably-liveobjects.md §5.2), for one site. Every operation of a channel
 * gets its serial from the channel's one sequence, so each is newer than everything stored: a set
 * or remove always wins its key, a clear removes every entry, a create is merged once, increments
 * are summed. The Redis backend runs the same rules in Lua (backend/redis/lua/live-objects.ts);
 * one table of cases holds both (test/contracts/live-apply-cases.ts, run on every backend).
 *
 * An object is stored as a head (LiveHead) and, for a map, one record per entry (StoredEntry), so
 * an operation reads and writes only the entries it names plus bounded bookkeeping (the head's
 * live key count and size, the channel's total size): a set on a map of 1,000 large values costs
 * what a set on an empty one does. A create's entries are stored as entries too, marked `c`
 * (the plugin merges them as entries without a serial, which any later write of the key replaces).
 */
import { GatewayError } from '../../errors'
import { entrySize } from './live-size'
import { LWW, OpAction, ROOT, typeOfId } from './live-wire'
import type {
  LiveChanges,
  LiveHead,
  LiveLimits,
  LiveObjectRecord,
  MapEntry,
  ObjectData,
  Operation,
  StoredEntry,
} from './ports'

export type { LiveChanges, LiveHead, LiveLimits, LiveObjectRecord, StoredEntry } from './ports'

export const objectsLimit = (max: number) =>
  new GatewayError(92001, `Channel object limit exceeded: a channel holds at most ${max} objects`)
export const keysLimit = (id: string, max: number) =>
  new GatewayError(92001, `Map key limit exceeded: map ${id} holds at most ${max} keys`)
/** The hosted service's words (error 92001: "channel object total size limit <n> exceeded"). */
export const bytesLimit = (max: number) => new GatewayError(92001, `channel object total size limit ${max} exceeded`)
export const tombstoned = (id: string) =>
  new GatewayError(92002, `Object ${id} has been deleted (tombstoned); operations on it are refused`)
export const notFinite = (id: string) =>
  new GatewayError(92000, `Invalid object message: counter ${id} would not hold a finite number`)

/** What applying needs of the store: heads and entries by id (copies it may change), and totals. */
export interface ApplyTarget {
  head(objectId: string): LiveHead | undefined
  entry(objectId: string, key: string): StoredEntry | undefined
  /** Objects stored besides `root`. */
  count(): number
  /** The channel's total object size (live-size.ts). */
  bytes(): number
}

const isLive = (e: StoredEntry | undefined): e is StoredEntry => e !== undefined && !e.tombstone && !!e.data

/**
 * Applies `ops` (serial `serials[i]`, time `ts`) to copies of what they touch; returns what to
 * write, or throws (92001 limits, 92002 tombstoned, 92000 a counter past a finite number) with
 * nothing changed.
 */
export function applyOps(
  target: ApplyTarget,
  ops: Operation[],
  serials: string[],
  ts: number,
  limits: LiveLimits,
): LiveChanges {
  const heads = new Map<string, LiveHead>()
  const written = new Map<string, Map<string, StoredEntry>>()
  const cleared = new Set<string>()
  let added = 0
  let bytes = 0
  const entryOf = (id: string, key: string) =>
    written.get(id)?.get(key) ?? (cleared.has(id) ? undefined : target.entry(id, key))
  const put = (id: string, key: string, e: StoredEntry) => {
    let m = written.get(id)
    if (!m) written.set(id, (m = new Map()))
    m.set(key, e)
  }
  const grow = (h: LiveHead, n: number) => {
    h.bytes = (h.bytes ?? 0) + n
    bytes += n
  }
  const clear = (h: LiveHead) => {
    grow(h, -(h.bytes ?? 0))
    h.keys = 0
    written.delete(h.objectId)
    cleared.add(h.objectId)
  }
  /** Writes a live value at `key` (a set, or a create's entry), keeping the head's counts. */
  const setEntry = (h: LiveHead, key: string, e: StoredEntry) => {
    const cur = entryOf(h.objectId, key)
    if (isLive(cur)) grow(h, -(cur.z ?? 0))
    else h.keys = (h.keys ?? 0) + 1
    grow(h, e.z ?? 0)
    put(h.objectId, key, e)
    if (h.keys! > limits.maxKeys) throw keysLimit(h.objectId, limits.maxKeys)
  }
  const finite = (h: LiveHead) => {
    if (!Number.isFinite((h.createCount ?? 0) + (h.count ?? 0))) throw notFinite(h.objectId)
  }

  ops.forEach((op, i) => {
    const id = op.objectId
    let h = heads.get(id)
    if (!h) {
      h = target.head(id)
      if (!h) {
        h = { objectId: id }
        if (id !== ROOT && target.count() + ++added > limits.maxObjects) throw objectsLimit(limits.maxObjects)
        if (typeOfId(id) === 'counter') grow(h, 8)
      }
      heads.set(id, h)
    }
    if (h.tombstone) throw tombstoned(id)
    const serial = serials[i]!
    h.serial = serial
    switch (op.action) {
      case OpAction.MAP_CREATE:
        if (h.created) return
        h.created = true
        // after a clear the plugin skips a create's entries (they have no serial to beat it)
        if (h.clearTimeserial === undefined)
          for (const [k, e] of Object.entries(op.mapCreate!.entries)) {
            // merged like a set without a serial: it never replaces what an operation wrote
            if (e.tombstone || !e.data || entryOf(id, k) !== undefined) continue
            setEntry(h, k, { data: e.data, c: true, z: entrySize(k, e.data) })
          }
        return
      case OpAction.COUNTER_CREATE:
        if (h.created) return
        h.created = true
        h.createCount = op.counterCreate!.count
        return finite(h)
      case OpAction.MAP_SET: {
        const { key, value } = op.mapSet!
        return setEntry(h, key, { data: value, timeserial: serial, z: entrySize(key, value) })
      }
      case OpAction.MAP_REMOVE: {
        const key = op.mapRemove!.key
        const cur = entryOf(id, key)
        if (isLive(cur)) {
          grow(h, -(cur.z ?? 0))
          h.keys = (h.keys ?? 1) - 1
        }
        return put(id, key, { timeserial: serial, tombstone: true, serialTimestamp: ts })
      }
      case OpAction.COUNTER_INC:
        h.count = (h.count ?? 0) + op.counterInc!.number
        return finite(h)
      case OpAction.MAP_CLEAR:
        // newer than the map's last clear by construction (one sequence): every entry goes (RTLM24)
        h.clearTimeserial = serial
        return clear(h)
      case OpAction.OBJECT_DELETE:
        if (id === ROOT) return
        h.tombstone = true
        h.tombstonedAt = ts
        clear(h)
        delete h.count
        delete h.createCount
        return
    }
  })
  if (bytes > 0 && target.bytes() + bytes > limits.maxChannelBytes) throw bytesLimit(limits.maxChannelBytes)
  const entries: LiveChanges['entries'] = []
  for (const [objectId, m] of written) for (const [key, entry] of m) entries.push({ objectId, key, entry })
  return { heads: [...heads.values()], cleared: [...cleared], entries, added, bytes }
}

/** A map's live entries: the create's entries overlaid by those operations wrote, removals hidden. */
export function liveEntries(rec: LiveObjectRecord): Map<string, ObjectData> {
  const out = new Map<string, ObjectData>()
  for (const [k, e] of Object.entries(rec.createEntries ?? {})) if (!e.tombstone && e.data) out.set(k, e.data)
  for (const [k, e] of Object.entries(rec.entries ?? {})) {
    if (e.tombstone || !e.data) out.delete(k)
    else out.set(k, e.data)
  }
  return out
}

/** A counter's value: its create's count plus the increments. */
export const counterValue = (rec: LiveObjectRecord): number => (rec.createCount ?? 0) + (rec.count ?? 0)

/** An object as reads and syncs see it: its head and its stored entries, the create's kept apart. */
export function recordOf(head: LiveHead, stored: Iterable<[string, StoredEntry]>): LiveObjectRecord {
  const { keys: _k, bytes: _b, ...rec } = head
  const out: LiveObjectRecord = rec
  if (typeOfId(head.objectId) !== 'map' || head.tombstone) return out
  const entries: Record<string, MapEntry> = {}
  const created: Record<string, MapEntry> = {}
  for (const [k, { c, z: _z, ...e }] of stored) (c ? created : entries)[k] = e
  out.entries = entries
  if (head.created) out.createEntries = created
  return out
}

/**
 * A record of the earlier layout (entries inside the record) as a head and its entries: the
 * create's entries that no operation overwrote become marked entries (unless a clear hid them).
 */
export function fromLegacy(rec: LiveObjectRecord): { head: LiveHead; entries: Array<[string, StoredEntry]> } {
  const { entries, createEntries, ...head } = rec as LiveObjectRecord & { entries?: unknown; createEntries?: unknown }
  const out = new Map<string, StoredEntry>()
  const h: LiveHead = { ...head, keys: 0, bytes: typeOfId(rec.objectId) === 'counter' && !rec.tombstone ? 8 : 0 }
  if (!rec.tombstone) {
    if (rec.clearTimeserial === undefined)
      for (const [k, e] of Object.entries(rec.createEntries ?? {}))
        if (!e.tombstone && e.data) out.set(k, { data: e.data, c: true })
    for (const [k, e] of Object.entries(rec.entries ?? {})) out.set(k, { ...e })
    for (const [k, e] of out)
      if (isLive(e)) {
        e.z = entrySize(k, e.data)
        h.keys!++
        h.bytes! += e.z
      }
  }
  return { head: h, entries: [...out] }
}

/** One ObjectMessage of an OBJECT_SYNC (JSON wire form): the object's state, creation kept apart (OST2). */
export function syncMessage(rec: LiveObjectRecord, siteCode: string): Record<string, unknown> {
  const type = typeOfId(rec.objectId)
  const object: Record<string, unknown> = {
    objectId: rec.objectId,
    siteTimeserials: rec.serial ? { [siteCode]: rec.serial } : {},
    tombstone: rec.tombstone === true,
  }
  if (type === 'counter') {
    if (rec.created && !rec.tombstone)
      object.createOp = {
        action: OpAction.COUNTER_CREATE,
        objectId: rec.objectId,
        counterCreate: { count: rec.createCount ?? 0 },
      }
    object.counter = { count: rec.tombstone ? 0 : (rec.count ?? 0) }
  } else {
    if (rec.created && !rec.tombstone)
      object.createOp = {
        action: OpAction.MAP_CREATE,
        objectId: rec.objectId,
        mapCreate: { semantics: LWW, entries: rec.createEntries ?? {} },
      }
    const entries: Record<string, MapEntry> = {}
    if (!rec.tombstone) for (const [k, e] of Object.entries(rec.entries ?? {})) entries[k] = syncEntry(e)
    const map: Record<string, unknown> = { semantics: LWW, entries }
    if (rec.clearTimeserial !== undefined && !rec.tombstone) map.clearTimeserial = rec.clearTimeserial
    object.map = map
  }
  const m: Record<string, unknown> = { object }
  if (rec.tombstone && rec.tombstonedAt !== undefined) m.serialTimestamp = rec.tombstonedAt
  return m
}

/** A map entry as a sync carries it (OME2). */
export const syncEntry = (e: MapEntry): MapEntry =>
  e.tombstone
    ? { timeserial: e.timeserial, tombstone: true, serialTimestamp: e.serialTimestamp }
    : { data: e.data, timeserial: e.timeserial, tombstone: false }

/** The root map as it is before any operation. */
export const emptyRoot = (): LiveObjectRecord => ({ objectId: ROOT })

/** A placeholder serial for operation `i` of a batch whose serials are not known yet (see `settleSerials`). */
export const serialToken = (i: number): string => `\u0000${i}`

/**
 * Puts the serials (and time) a batch got into the changes `applyOps` made with `serialToken`
 * placeholders: a backend that checks a batch before its log entries exist applies it first.
 */
export function settleSerials(changes: LiveChanges, serials: string[], ts: number): void {
  const real = (s: string) => serials[Number(s.slice(1))]!
  const isToken = (s: string | undefined): s is string => s !== undefined && s.charCodeAt(0) === 0
  for (const h of changes.heads) {
    if (isToken(h.serial)) {
      h.serial = real(h.serial)
      if (h.tombstone) h.tombstonedAt = ts
    }
    if (isToken(h.clearTimeserial)) h.clearTimeserial = real(h.clearTimeserial)
  }
  for (const { entry: e } of changes.entries) {
    if (!isToken(e.timeserial)) continue
    e.timeserial = real(e.timeserial)
    if (e.tombstone) e.serialTimestamp = ts
  }
}
