/**
 * The stored state of a channel's objects and how operations change it: the rules the plugin
 * applies (shared/reference/ably-liveobjects.md §5.2), for one site. Every operation of a channel
 * gets its serial from the channel's one sequence, so each is newer than everything stored: a set
 * or remove always wins its key, a create is merged once, increments are summed. The Redis backend
 * runs the same rules in Lua (backend/redis/live-object-scripts.ts); the contract tests hold both.
 */
import { GatewayError } from '../../errors'
import { LWW, OpAction, ROOT, typeOfId } from './live-wire'
import type { LiveLimits, LiveObjectRecord, MapEntry, ObjectData, Operation } from './ports'

export type { LiveLimits, LiveObjectRecord } from './ports'

export const objectsLimit = (max: number) =>
  new GatewayError(92001, `Channel object limit exceeded: a channel holds at most ${max} objects`, { status: 400 })
export const keysLimit = (id: string, max: number) =>
  new GatewayError(92001, `Map key limit exceeded: map ${id} holds at most ${max} keys`, { status: 400 })
export const tombstoned = (id: string) =>
  new GatewayError(92002, `Object ${id} has been deleted (tombstoned); operations on it are refused`, { status: 400 })

/** What applying needs of the store: records by id (copies it may change) and how many objects it holds. */
export interface ApplyTarget {
  get(objectId: string): LiveObjectRecord | undefined
  /** Objects stored besides `root`. */
  count(): number
}

/**
 * Applies `ops` (serial `serials[i]`, time `ts`) to copies of the records they touch; returns the
 * changed records and how many of them are new objects (root aside), or throws (92001 limits,
 * 92002 tombstoned) with nothing changed.
 */
export function applyOps(
  target: ApplyTarget,
  ops: Operation[],
  serials: string[],
  ts: number,
  limits: LiveLimits,
): { changed: LiveObjectRecord[]; added: number } {
  const touched = new Map<string, LiveObjectRecord>()
  let added = 0
  ops.forEach((op, i) => {
    let rec = touched.get(op.objectId)
    if (!rec) {
      rec = target.get(op.objectId)
      if (!rec) {
        rec = { objectId: op.objectId }
        if (op.objectId !== ROOT && target.count() + ++added > limits.maxObjects) throw objectsLimit(limits.maxObjects)
      }
      touched.set(op.objectId, rec)
    }
    if (rec.tombstone) throw tombstoned(op.objectId)
    applyOp(rec, op, serials[i]!, ts, limits)
  })
  return { changed: [...touched.values()], added }
}

function applyOp(rec: LiveObjectRecord, op: Operation, serial: string, ts: number, limits: LiveLimits) {
  rec.serial = serial
  switch (op.action) {
    case OpAction.MAP_CREATE:
      if (!rec.created) {
        rec.created = true
        rec.createEntries = op.mapCreate!.entries
        checkKeys(rec, limits)
      }
      return
    case OpAction.COUNTER_CREATE:
      if (!rec.created) {
        rec.created = true
        rec.createCount = op.counterCreate!.count
      }
      return
    case OpAction.MAP_SET:
      collect(rec, ts, limits)
      ;(rec.entries ??= Object.create(null) as Record<string, MapEntry>)[op.mapSet!.key] = {
        data: op.mapSet!.value,
        timeserial: serial,
      }
      checkKeys(rec, limits)
      return
    case OpAction.MAP_REMOVE:
      collect(rec, ts, limits)
      ;(rec.entries ??= Object.create(null) as Record<string, MapEntry>)[op.mapRemove!.key] = {
        timeserial: serial,
        tombstone: true,
        serialTimestamp: ts,
      }
      return
    case OpAction.COUNTER_INC:
      rec.count = (rec.count ?? 0) + op.counterInc!.number
      return
    case OpAction.OBJECT_DELETE:
      if (rec.objectId === ROOT) return
      rec.tombstone = true
      rec.tombstonedAt = ts
      delete rec.entries
      delete rec.createEntries
      delete rec.count
      delete rec.createCount
      return
  }
}

/** Removed keys past the grace period are forgotten (clients forget them after the same period). */
function collect(rec: LiveObjectRecord, now: number, limits: LiveLimits) {
  if (!rec.entries) return
  for (const [k, e] of Object.entries(rec.entries))
    if (e.tombstone && (e.serialTimestamp ?? 0) < now - limits.gcGraceMs) delete rec.entries[k]
}

function checkKeys(rec: LiveObjectRecord, limits: LiveLimits) {
  if (liveEntries(rec).size > limits.maxKeys) throw keysLimit(rec.objectId, limits.maxKeys)
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
    if (!rec.tombstone)
      for (const [k, e] of Object.entries(rec.entries ?? {}))
        entries[k] = e.tombstone
          ? { timeserial: e.timeserial, tombstone: true, serialTimestamp: e.serialTimestamp }
          : { data: e.data, timeserial: e.timeserial, tombstone: false }
    object.map = { semantics: LWW, entries }
  }
  const m: Record<string, unknown> = { object }
  if (rec.tombstone && rec.tombstonedAt !== undefined) m.serialTimestamp = rec.tombstonedAt
  return m
}

/** The root map as it is before any operation. */
export const emptyRoot = (): LiveObjectRecord => ({ objectId: ROOT })

/** A placeholder serial for operation `i` of a batch whose serials are not known yet (see `settleSerials`). */
export const serialToken = (i: number): string => `\u0000${i}`

/**
 * Puts the serials (and time) a batch got into the records `applyOps` changed with `serialToken`
 * placeholders: a backend that checks a batch before its log entries exist applies it first.
 */
export function settleSerials(recs: LiveObjectRecord[], serials: string[], ts: number): void {
  const real = (s: string) => serials[Number(s.slice(1))]!
  const isToken = (s: string | undefined): s is string => s !== undefined && s.charCodeAt(0) === 0
  for (const rec of recs) {
    if (isToken(rec.serial)) {
      rec.serial = real(rec.serial)
      if (rec.tombstone) rec.tombstonedAt = ts
    }
    for (const e of Object.values(rec.entries ?? {})) {
      if (!isToken(e.timeserial)) continue
      e.timeserial = real(e.timeserial)
      if (e.tombstone) e.serialTimestamp = ts
    }
  }
}
