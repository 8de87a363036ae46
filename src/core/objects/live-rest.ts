/**
 * The plugin's LiveObjects over REST (`/channels/{channel}/object`, shared/reference/ably-liveobjects.md
 * §11): reading the tree or one object (compact or full, by id or path) and publishing operations
 * given by object id or path. Values are returned with bytes as Uint8Array (the API layer encodes
 * them for the response's format).
 */
import { GatewayError } from '../../errors'
import { randomId } from '../../lib/crypto'
import { fromBase64 } from '../../lib/encoding'
import type { Principal } from '../auth/principal'
import type { LiveOp, LiveObjectService } from './live-service'
import { counterValue, liveEntries } from './live-state'
import { clientOperation, invalidObjects, OpAction, ROOT, serverCreate, typeOfId, type ObjectType } from './live-wire'
import type { LiveObjectRecord, ObjectData } from './ports'

export interface ReadParams {
  objectId?: string
  path?: string
  compact: boolean
}

export interface PublishResult {
  messageId: string
  channel: string
  objectIds: string[]
}

const notFound = (id: string) => new GatewayError(92004, `unable to fetch objects tree for not found object: ${id}`)
const noPath = (path: string) => new GatewayError(92005, `path "${path}" does not match any object`)

/** A dot path as its segments: `\.` escapes a dot inside a key; `""` is the start object itself. */
export function pathSegments(path: string): string[] {
  if (path === '') return []
  const out: string[] = []
  let cur = ''
  for (let i = 0; i < path.length; i++) {
    const c = path[i]!
    if (c === '\\' && path[i + 1] === '.') {
      cur += '.'
      i++
    } else if (c === '.') {
      out.push(cur)
      cur = ''
    } else cur += c
  }
  out.push(cur)
  return out
}

type Objects = Map<string, LiveObjectRecord>

const alive = (objects: Objects, id: string) => {
  const r = objects.get(id)
  return r && !r.tombstone ? r : undefined
}

const leaf = (d: ObjectData): unknown =>
  d.string ?? d.number ?? d.boolean ?? d.json ?? (d.bytes !== undefined ? fromBase64(d.bytes) : undefined)

const dataOut = (d: ObjectData): Record<string, unknown> =>
  d.bytes !== undefined ? { bytes: fromBase64(d.bytes) } : { ...d }

/**
 * An object in the compact form: maps as plain objects of live entries, counters as numbers. Each
 * object is written out once per read: a reference to one already written (a cycle, or a second
 * path to a shared object) is `{objectId}`, so a read is bounded by the channel's objects (before,
 * 21 maps each referring twice to the next made a read of 270 MB that held the node 5.7 s).
 */
function compactOf(objects: Objects, rec: LiveObjectRecord, seen: Set<string>): unknown {
  if (typeOfId(rec.objectId) === 'counter') return counterValue(rec)
  const out: Record<string, unknown> = {}
  seen.add(rec.objectId)
  for (const [k, d] of liveEntries(rec)) {
    if (d.objectId === undefined) out[k] = leaf(d)
    else if (seen.has(d.objectId)) out[k] = { objectId: d.objectId }
    else {
      const child = alive(objects, d.objectId)
      if (child) out[k] = compactOf(objects, child, seen)
    }
  }
  return out
}

/** An object in the full form: references inlined, each object once per read (then `{objectId}`). */
function fullOf(objects: Objects, rec: LiveObjectRecord, seen: Set<string>): Record<string, unknown> {
  if (typeOfId(rec.objectId) === 'counter')
    return { objectId: rec.objectId, counter: { data: { number: counterValue(rec) } } }
  const entries: Record<string, unknown> = {}
  seen.add(rec.objectId)
  for (const [k, d] of liveEntries(rec)) {
    if (d.objectId === undefined) entries[k] = { data: dataOut(d) }
    else if (seen.has(d.objectId)) entries[k] = { data: { objectId: d.objectId } }
    else {
      const child = alive(objects, d.objectId)
      if (child) entries[k] = { data: fullOf(objects, child, seen) }
    }
  }
  return { objectId: rec.objectId, map: { semantics: 'LWW', entries } }
}

/** What a path leads to from `start`: objects (wildcards may match several) or, at the end, a leaf. */
type Target = { rec: LiveObjectRecord } | { data: ObjectData }

function resolve(objects: Objects, start: LiveObjectRecord, segments: string[], wildcards: boolean): Target[] {
  let here: Target[] = [{ rec: start }]
  for (const seg of segments) {
    const next: Target[] = []
    // an object reached twice at one level is one target (shared references would multiply them)
    const reached = new Set<string>()
    for (const t of here) {
      if (!('rec' in t) || typeOfId(t.rec.objectId) !== 'map') continue
      const entries = liveEntries(t.rec)
      const picked = wildcards && seg === '*' ? [...entries.values()] : entries.has(seg) ? [entries.get(seg)!] : []
      for (const d of picked) {
        if (d.objectId === undefined) next.push({ data: d })
        else {
          const rec = alive(objects, d.objectId)
          if (rec && !reached.has(rec.objectId)) {
            reached.add(rec.objectId)
            next.push({ rec })
          }
        }
      }
    }
    here = next
  }
  return here
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array)

const PAYLOADS = [
  'mapSet',
  'mapRemove',
  'counterInc',
  'mapCreate',
  'counterCreate',
  'mapCreateWithObjectId',
  'counterCreateWithObjectId',
] as const

/** The REST side of the plugin's LiveObjects, on the service that publishes and reads them. */
export class LiveObjectRest {
  constructor(private readonly live: LiveObjectService) {}

  /** The channel's objects by id: a read (a charged state query), or what a publish's paths resolve in. */
  private async objects(p: Principal, channel: string, read: boolean): Promise<Objects> {
    const recs = read ? await this.live.query(p, channel) : await this.live.snapshot(p, channel)
    return new Map(recs.map((r) => [r.objectId, r]))
  }

  async read(p: Principal, channel: string, q: ReadParams): Promise<unknown> {
    const objects = await this.objects(p, channel, true)
    const startId = q.objectId ?? ROOT
    const start = objects.get(startId)
    if (!start) throw notFound(startId)
    if (start.tombstone)
      throw startId === ROOT ? new GatewayError(92003, 'the root object has been deleted') : notFound(startId)
    const found = resolve(objects, start, pathSegments(q.path ?? ''), false)
    const t = found[0]
    if (!t) throw noPath(q.path ?? '')
    if ('data' in t) return q.compact ? leaf(t.data) : dataOut(t.data)
    return q.compact ? compactOf(objects, t.rec, new Set()) : fullOf(objects, t.rec, new Set())
  }

  /**
   * Publishes the body's operations (one, or an array) as one message, applied all or none. A
   * target is an `objectId` or a `path` from root (resolved now; `*` matches one level, each
   * match an operation); a create with a path also sets the new object at it.
   */
  async publish(p: Principal, channel: string, body: unknown, messageId: string): Promise<PublishResult> {
    const list = Array.isArray(body) ? body : [body]
    if (list.length === 0) throw invalidObjects('the body holds no operation')
    let objects: Objects | undefined
    const load = async () => (objects ??= await this.objects(p, channel, false))
    const ops: LiveOp[] = []
    const objectIds: string[] = []
    let idBase: string | undefined
    for (const [i, raw] of list.entries()) {
      const where = `operation ${i}`
      if (!isRecord(raw)) throw invalidObjects(`${where} must be an object`)
      if (typeof raw.id === 'string' && raw.id && i === 0) idBase = raw.id
      const kinds = PAYLOADS.filter((k) => raw[k] !== undefined && raw[k] !== null)
      if (kinds.length !== 1) throw invalidObjects(`${where} must hold exactly one of ${PAYLOADS.join(', ')}`)
      const kind = kinds[0]!
      const path = typeof raw.path === 'string' ? raw.path : undefined
      const objectId = typeof raw.objectId === 'string' ? raw.objectId : undefined
      if (kind === 'mapCreateWithObjectId' || kind === 'counterCreateWithObjectId') {
        if (!objectId) throw invalidObjects('objectId is required with ' + kind)
        const op = clientOperation(
          {
            action: kind === 'mapCreateWithObjectId' ? OpAction.MAP_CREATE : OpAction.COUNTER_CREATE,
            objectId,
            [kind]: raw[kind],
          },
          where,
        )
        ops.push({ op })
        objectIds.push(objectId)
        if (path !== undefined) await this.setAt(p, channel, await load(), path, objectId, ops, where)
        continue
      }
      if (kind === 'mapCreate' || kind === 'counterCreate') {
        if (!isRecord(raw[kind])) throw invalidObjects(`${where}.${kind} must be an object`)
        const type: ObjectType = kind === 'mapCreate' ? 'map' : 'counter'
        const op = serverCreate(type, raw[kind], this.live.now(), nonce(), `${where}.${kind}`)
        ops.push({ op })
        objectIds.push(op.objectId)
        if (path !== undefined) await this.setAt(p, channel, await load(), path, op.objectId, ops, where)
        continue
      }
      // mapSet, mapRemove, counterInc: on each target
      const targets: string[] = []
      if (objectId !== undefined) targets.push(objectId)
      else if (path !== undefined) {
        const objs = await load()
        const segs = pathSegments(path)
        // a wildcard's matches of another type than the operation's are left out
        const fits = (id: string) => !segs.includes('*') || typeOfId(id) === (kind === 'counterInc' ? 'counter' : 'map')
        for (const t of resolve(objs, objs.get(ROOT)!, segs, true))
          if ('rec' in t && fits(t.rec.objectId)) targets.push(t.rec.objectId)
        if (targets.length === 0) throw noPath(path)
      } else throw new GatewayError(92006, `${where} names neither an objectId nor a path`)
      const action =
        kind === 'mapSet' ? OpAction.MAP_SET : kind === 'mapRemove' ? OpAction.MAP_REMOVE : OpAction.COUNTER_INC
      for (const id of targets) {
        ops.push({ op: clientOperation({ action, objectId: id, [kind]: raw[kind] }, where) })
        objectIds.push(id)
      }
    }
    const id = idBase ?? messageId
    await this.live.publish(p, channel, ops, { id, clientIds: idBase !== undefined })
    return { messageId: id, channel, objectIds }
  }

  /** A create with a path: a MAP_SET of the new object at the path's last key, on the map the rest leads to. */
  private async setAt(
    _p: Principal,
    _channel: string,
    objects: Objects,
    path: string,
    objectId: string,
    ops: LiveOp[],
    where: string,
  ) {
    const segs = pathSegments(path)
    if (segs.includes('*')) throw new GatewayError(92007, 'wildcard paths are not allowed for create operations')
    const key = segs.pop()
    if (key === undefined) throw invalidObjects(`${where}.path must name a key`)
    const parent = resolve(objects, objects.get(ROOT)!, segs, false)[0]
    if (!parent || !('rec' in parent) || typeOfId(parent.rec.objectId) !== 'map') throw noPath(path)
    ops.push({
      op: clientOperation(
        { action: OpAction.MAP_SET, objectId: parent.rec.objectId, mapSet: { key, value: { objectId } } },
        where,
      ),
    })
  }
}

/** A nonce for a server-made id (clients use 16 characters or more). */
const nonce = () => randomId(16)
