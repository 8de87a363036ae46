/**
 * The LiveObjects protocol of the official client's plugin (`ably/liveobjects`), as data: object
 * operations, values and ids (shared/reference/ably-liveobjects.md §4, §9). Everything here is in
 * the JSON wire form (bytes as base64 text, JSON values as JSON text), the form operations are
 * stored and fanned out in; the realtime and REST layers convert bytes for msgpack.
 */
import { GatewayError } from '../../errors'
import { sha256Base64url } from '../../lib/crypto'
import { toBase64 } from '../../lib/encoding'
import type { MapEntry, ObjectData, Operation } from './ports'

export type { MapEntry, ObjectData, Operation } from './ports'

export const OpAction = {
  MAP_CREATE: 0,
  MAP_SET: 1,
  MAP_REMOVE: 2,
  COUNTER_CREATE: 3,
  COUNTER_INC: 4,
  OBJECT_DELETE: 5,
  MAP_CLEAR: 6,
} as const

/** Map semantics: last write wins (the only one). */
export const LWW = 0
/** The one object every channel has. */
export const ROOT = 'root'

const ID = /^(map|counter):([A-Za-z0-9_-]{43})@(\d{1,16})$/
/** Longest map key accepted (characters). */
export const MAX_KEY_LENGTH = 1024

export const invalidObjects = (why: string) => new GatewayError(92000, `Invalid object message: ${why}`)

export type ObjectType = 'map' | 'counter'

/** The type an object id names (`root` is a map); undefined when it is no object id. */
export function typeOfId(id: unknown): ObjectType | undefined {
  if (id === ROOT) return 'map'
  if (typeof id !== 'string') return undefined
  const m = ID.exec(id)
  return m ? (m[1] as ObjectType) : undefined
}

/** The id of an object created with `initialValue` and `nonce` at `ms`: `type:sha256(initialValue:nonce)@ms`. */
export const objectIdOf = (type: ObjectType, initialValue: string, nonce: string, ms: number): string =>
  `${type}:${sha256Base64url(`${initialValue}:${nonce}`)}@${ms}`

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array)

/** An ObjectData as either wire sends it, in the JSON wire form; 92000 unless exactly one valid value. */
export function objectData(v: unknown, where: string): ObjectData {
  if (!isRecord(v)) throw invalidObjects(`${where} must be an object`)
  const out: ObjectData = {}
  let n = 0
  if (v.objectId !== undefined && v.objectId !== null) {
    if (!typeOfId(v.objectId)) throw invalidObjects(`${where}.objectId is not an object id`)
    out.objectId = v.objectId as string
    n++
  }
  if (v.string !== undefined && v.string !== null) {
    if (typeof v.string !== 'string' || !v.string.isWellFormed())
      throw invalidObjects(`${where}.string must be a string`)
    if (v.encoding === 'json') out.json = jsonText(v.string, where)
    else out.string = v.string
    n++
  }
  if (v.number !== undefined && v.number !== null) {
    if (typeof v.number !== 'number' || !Number.isFinite(v.number))
      throw invalidObjects(`${where}.number must be a finite number`)
    out.number = v.number
    n++
  }
  if (v.boolean !== undefined && v.boolean !== null) {
    if (typeof v.boolean !== 'boolean') throw invalidObjects(`${where}.boolean must be a boolean`)
    out.boolean = v.boolean
    n++
  }
  if (v.bytes !== undefined && v.bytes !== null) {
    if (v.bytes instanceof Uint8Array) out.bytes = toBase64(v.bytes)
    else if (typeof v.bytes === 'string' && /^[A-Za-z0-9+/]*={0,2}$/.test(v.bytes)) out.bytes = v.bytes
    else throw invalidObjects(`${where}.bytes must be binary or base64`)
    n++
  }
  if (v.json !== undefined && v.json !== null) {
    if (typeof v.json !== 'string') throw invalidObjects(`${where}.json must be JSON text`)
    out.json = jsonText(v.json, where)
    n++
  }
  if (n !== 1) throw invalidObjects(`${where} must hold exactly one value`)
  return out
}

function jsonText(s: string, where: string): string {
  let parsed: unknown
  try {
    parsed = JSON.parse(s)
  } catch {
    throw invalidObjects(`${where}.json is not JSON`)
  }
  if (typeof parsed !== 'object' || parsed === null) throw invalidObjects(`${where}.json must be an object or array`)
  return s
}

function mapKey(v: unknown, where: string): string {
  if (typeof v !== 'string' || v.length > MAX_KEY_LENGTH || !v.isWellFormed())
    throw invalidObjects(`${where} must be a string of at most ${MAX_KEY_LENGTH} characters`)
  return v
}

/** The entries of a map's initial value (`{key: {data}}`). */
function initialEntries(v: unknown, where: string): Record<string, MapEntry> {
  if (v === undefined || v === null) return {}
  if (!isRecord(v)) throw invalidObjects(`${where} must be an object`)
  const out: Record<string, MapEntry> = Object.create(null)
  for (const [k, e] of Object.entries(v)) {
    mapKey(k, `${where} key`)
    if (!isRecord(e)) throw invalidObjects(`${where}.${k} must be an object`)
    if (e.tombstone === true) out[k] = { tombstone: true }
    else out[k] = { data: objectData(e.data, `${where}.${k}.data`) }
  }
  return out
}

function semantics(v: unknown, where: string) {
  if (v !== undefined && v !== 0 && v !== 'LWW' && v !== 'lww') throw invalidObjects(`${where} must be 0 (LWW)`)
}

/** The create payload an `initialValue` holds (JSON text, as the plugin hashed it). */
function parseInitial(
  type: ObjectType,
  text: string,
  where: string,
): Operation['mapCreate'] | Operation['counterCreate'] {
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch {
    throw invalidObjects(`${where}.initialValue is not JSON`)
  }
  if (!isRecord(v)) throw invalidObjects(`${where}.initialValue must be a JSON object`)
  return type === 'map' ? mapCreate(v, where) : counterCreate(v, where)
}

function mapCreate(v: Record<string, unknown>, where: string): Operation['mapCreate'] {
  semantics(v.semantics, `${where}.semantics`)
  return { semantics: LWW, entries: initialEntries(v.entries, `${where}.entries`) }
}

function counterCreate(v: Record<string, unknown>, where: string): Operation['counterCreate'] {
  const count = v.count ?? 0
  if (typeof count !== 'number' || !Number.isFinite(count))
    throw invalidObjects(`${where}.count must be a finite number`)
  return { count }
}

/**
 * A create of an object whose id the client derived (`*CreateWithObjectId`): the id must be the
 * hash of the exact `initialValue` text and the nonce (never re-serialised).
 */
function createWithId(type: ObjectType, objectId: string, p: unknown, where: string) {
  if (!isRecord(p)) throw invalidObjects(`${where} must be an object`)
  if (typeof p.initialValue !== 'string') throw invalidObjects(`${where}.initialValue must be JSON text`)
  if (typeof p.nonce !== 'string' || p.nonce.length === 0)
    throw invalidObjects('nonce is required when objectId is specified')
  const ms = Number(ID.exec(objectId)?.[3])
  if (objectIdOf(type, p.initialValue, p.nonce, ms) !== objectId)
    throw invalidObjects(`objectId ${objectId} does not match the hash of its initialValue and nonce`)
  return parseInitial(type, p.initialValue, where)
}

/**
 * One operation as a client sends it (realtime `ObjectMessage.operation`), validated and in the
 * form it is applied and fanned out in. Clients may not delete objects, and may clear root only.
 */
export function clientOperation(v: unknown, where: string): Operation {
  if (!isRecord(v)) throw invalidObjects(`${where} must be an object`)
  const objectId = v.objectId
  const type = typeOfId(objectId)
  if (!type) throw invalidObjects(`${where}.objectId is not an object id`)
  const id = objectId as string
  const needs = (t: ObjectType) => {
    if (type !== t) throw invalidObjects(`${where}: action ${String(v.action)} does not apply to ${id}`)
  }
  switch (v.action) {
    case OpAction.MAP_CREATE: {
      needs('map')
      if (id === ROOT) throw invalidObjects('root cannot be created')
      const create = v.mapCreateWithObjectId
        ? createWithId('map', id, v.mapCreateWithObjectId, `${where}.mapCreateWithObjectId`)
        : isRecord(v.mapCreate)
          ? mapCreate(v.mapCreate, `${where}.mapCreate`)
          : undefined
      if (!create) throw invalidObjects(`${where}.mapCreateWithObjectId is required`)
      return { action: OpAction.MAP_CREATE, objectId: id, mapCreate: create as Operation['mapCreate'] }
    }
    case OpAction.COUNTER_CREATE: {
      needs('counter')
      const create = v.counterCreateWithObjectId
        ? createWithId('counter', id, v.counterCreateWithObjectId, `${where}.counterCreateWithObjectId`)
        : isRecord(v.counterCreate)
          ? counterCreate(v.counterCreate, `${where}.counterCreate`)
          : undefined
      if (!create) throw invalidObjects(`${where}.counterCreateWithObjectId is required`)
      return { action: OpAction.COUNTER_CREATE, objectId: id, counterCreate: create as Operation['counterCreate'] }
    }
    case OpAction.MAP_SET: {
      needs('map')
      const p = v.mapSet
      if (!isRecord(p)) throw invalidObjects(`${where}.mapSet is required`)
      return {
        action: OpAction.MAP_SET,
        objectId: id,
        mapSet: { key: mapKey(p.key, `${where}.mapSet.key`), value: objectData(p.value, `${where}.mapSet.value`) },
      }
    }
    case OpAction.MAP_REMOVE: {
      needs('map')
      const p = v.mapRemove
      if (!isRecord(p)) throw invalidObjects(`${where}.mapRemove is required`)
      return { action: OpAction.MAP_REMOVE, objectId: id, mapRemove: { key: mapKey(p.key, `${where}.mapRemove.key`) } }
    }
    case OpAction.COUNTER_INC: {
      needs('counter')
      const p = v.counterInc
      const n = isRecord(p) ? p.number : undefined
      if (typeof n !== 'number' || !Number.isFinite(n))
        throw invalidObjects(`${where}.counterInc.number must be a number`)
      return { action: OpAction.COUNTER_INC, objectId: id, counterInc: { number: n } }
    }
    case OpAction.MAP_CLEAR:
      // as the hosted service (its own test suite clears root this way): root only
      if (id !== ROOT) throw invalidObjects(`${where}: MAP_CLEAR applies to root only`)
      return { action: OpAction.MAP_CLEAR, objectId: id, mapClear: {} }
    case OpAction.OBJECT_DELETE:
      throw invalidObjects(`${where}: action ${v.action} is the server's only`)
    default:
      throw invalidObjects(`${where}.action ${String(v.action)} is not an object operation`)
  }
}

/** A create made by the server (REST without an id): a fresh id minted the way clients do. */
export function serverCreate(
  type: ObjectType,
  payload: Record<string, unknown>,
  now: number,
  nonce: string,
  where: string,
): Operation {
  if (type === 'map') {
    const create = mapCreate(payload, where)!
    const initialValue = JSON.stringify({ semantics: LWW, entries: create.entries })
    return { action: OpAction.MAP_CREATE, objectId: objectIdOf('map', initialValue, nonce, now), mapCreate: create }
  }
  const create = counterCreate(payload, where)!
  const initialValue = JSON.stringify(create)
  return {
    action: OpAction.COUNTER_CREATE,
    objectId: objectIdOf('counter', initialValue, nonce, now),
    counterCreate: create,
  }
}
