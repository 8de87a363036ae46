import { isJsonObject } from '../../core/objects/merge'
import {
  MAX_OBJECT_BYTES,
  OBJECT_HISTORY_MAX,
  type ChangePosition,
  type JsonObject,
  type JsonValue,
  type NamespaceSummary,
  type ObjectChange,
  type ObjectHistoryQuery,
  type ObjectState,
  type ObjectStore,
  type UpdateOptions,
  type UpdateOutcome,
} from '../../core/objects/ports'
import { withTimeout } from './errors'
import type { RedisCommander } from './clients'
import type { RedisKeys } from './keys'
import { ScriptRunner } from './script-runner'
import { OBJECT_DELETE_SCRIPT, OBJECT_UPDATE_SCRIPT } from './lua/objects'

export interface RedisObjectStoreSettings {
  historyTtlMs: number
  redisTimeoutMs: number
}

/** A patch or state as the scripts see it: objects stay objects, every other value is its JSON text. */
type Tree = { [key: string]: Tree | string | null }

function toTree(v: JsonObject): Tree {
  const out: Tree = {}
  for (const k of Object.keys(v)) {
    const x = v[k]!
    Object.defineProperty(out, k, {
      value: x === null ? null : isJsonObject(x) ? toTree(x) : JSON.stringify(x),
      enumerable: true,
      writable: true,
      configurable: true,
    })
  }
  return out
}

function fromTree(t: Tree): JsonObject {
  const out: JsonObject = {}
  for (const k of Object.keys(t)) {
    const x = t[k]!
    const value: JsonValue = typeof x === 'string' ? JSON.parse(x) : fromTree(x as Tree)
    Object.defineProperty(out, k, { value, enumerable: true, writable: true, configurable: true })
  }
  return out
}

const stateOf = (tree: string) => fromTree(JSON.parse(tree) as Tree)
const streamId = (p: ChangePosition) => `${p.timestamp}-${p.version}`
const MAX_SEQ = '18446744073709551615'
const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b))

/** Flat `[k, v, k, v]` or map reply of HGETALL as entries. */
function pairs(raw: unknown): Array<[string, string]> {
  if (!Array.isArray(raw)) return Object.entries(raw as Record<string, string>)
  const out: Array<[string, string]> = []
  for (let i = 0; i < raw.length; i += 2) out.push([String(raw[i]), String(raw[i + 1])])
  return out
}

/**
 * LiveObjects in Redis, shared by every node. Updates and deletes are one Lua script each (read,
 * merge, write, append history, maintain the namespace), so concurrent writers on any node are
 * serialized by Redis and none is lost. Versions come from a per-app counter. Objects' key order
 * is not preserved (the scripts hold objects as Lua tables).
 */
export class RedisObjectStore implements ObjectStore {
  private readonly updateScript: ScriptRunner
  private readonly deleteScript: ScriptRunner

  constructor(
    private readonly cmd: RedisCommander,
    private readonly keys: RedisKeys,
    private readonly s: RedisObjectStoreSettings,
  ) {
    this.updateScript = new ScriptRunner(cmd, OBJECT_UPDATE_SCRIPT)
    this.deleteScript = new ScriptRunner(cmd, OBJECT_DELETE_SCRIPT)
  }

  private t<T>(p: Promise<T>) {
    return withTimeout(p, this.s.redisTimeoutMs)
  }
  private send<T>(args: string[]): Promise<T> {
    return this.t(this.cmd.sendCommand<T>(args))
  }

  private writeKeys(app: string, ns: string, id: string) {
    const k = this.keys
    return [
      k.objectState(app, ns, id),
      k.objectHistory(app, ns, id),
      k.objectIds(app, ns),
      k.objectCounts(app),
      k.objectActivity(app),
      k.objectVersions(app),
    ]
  }

  async get(app: string, ns: string, id: string): Promise<ObjectState | undefined> {
    const [d, v, t] = await this.send<Array<string | null>>([
      'HMGET',
      this.keys.objectState(app, ns, id),
      'd',
      'v',
      't',
    ])
    return d == null ? undefined : { objectId: id, data: stateOf(d), version: String(v), timestamp: Number(t) }
  }

  async list(app: string, ns: string, q: { prefix: string; after?: string; limit: number }): Promise<ObjectState[]> {
    const from = q.after !== undefined && byBytes(q.after, q.prefix) >= 0 ? `(${q.after}` : `[${q.prefix}`
    const ids = await this.send<string[]>([
      'ZRANGEBYLEX',
      this.keys.objectIds(app, ns),
      from,
      '+',
      'LIMIT',
      '0',
      String(q.limit),
    ])
    const end = ids.findIndex((id) => !id.startsWith(q.prefix))
    const states = await Promise.all((end < 0 ? ids : ids.slice(0, end)).map((id) => this.get(app, ns, id)))
    return states.filter((s): s is ObjectState => s !== undefined)
  }

  async namespaces(app: string, q: { after?: string; limit: number }): Promise<NamespaceSummary[]> {
    const [counts, activity] = await Promise.all([
      this.send(['HGETALL', this.keys.objectCounts(app)]),
      this.send(['HGETALL', this.keys.objectActivity(app)]),
    ])
    const last = new Map(pairs(activity))
    return pairs(counts)
      .filter(([ns, n]) => Number(n) > 0 && (q.after === undefined || byBytes(ns, q.after) > 0))
      .sort(([a], [b]) => byBytes(a, b))
      .slice(0, q.limit)
      .map(([ns, n]) => ({ namespaceId: ns, objectCount: Number(n), lastActivity: Number(last.get(ns) ?? 0) }))
  }

  async namespace(app: string, ns: string): Promise<NamespaceSummary | undefined> {
    const [n, last] = await Promise.all([
      this.send(['HGET', this.keys.objectCounts(app), ns]),
      this.send(['HGET', this.keys.objectActivity(app), ns]),
    ])
    return n == null || Number(n) <= 0
      ? undefined
      : { namespaceId: ns, objectCount: Number(n), lastActivity: Number(last ?? 0) }
  }

  async update(app: string, ns: string, id: string, patch: JsonObject, opts: UpdateOptions): Promise<UpdateOutcome> {
    const args = [
      JSON.stringify(toTree(patch)),
      opts.expectedVersion ?? '',
      String(opts.now),
      String(OBJECT_HISTORY_MAX),
      String(this.s.historyTtlMs),
      ns,
      id,
      String(MAX_OBJECT_BYTES),
      JSON.stringify(patch),
    ]
    const r = await this.t(this.updateScript.run<Array<string | number>>(this.writeKeys(app, ns, id), args))
    if (r[0] === 'conflict') return { kind: 'conflict', currentVersion: r[1] ? String(r[1]) : undefined }
    if (r[0] === 'too-large') return { kind: 'too-large', size: Number(r[1]) }
    return {
      kind: 'updated',
      created: Number(r[4]) === 1,
      state: { objectId: id, data: stateOf(String(r[3])), version: String(r[1]), timestamp: Number(r[2]) },
    }
  }

  async delete(app: string, ns: string, id: string, now: number): Promise<ObjectChange | undefined> {
    const args = [String(now), String(OBJECT_HISTORY_MAX), String(this.s.historyTtlMs), ns, id]
    const r = await this.t(this.deleteScript.run<Array<string | number>>(this.writeKeys(app, ns, id), args))
    if (r[0] !== 'ok') return undefined
    return { objectId: id, action: 'delete', version: String(r[1]), timestamp: Number(r[2]) }
  }

  async history(app: string, ns: string, id: string, q: ObjectHistoryQuery): Promise<ObjectChange[]> {
    const key = this.keys.objectHistory(app, ns, id)
    const lo = q.start !== undefined ? `${q.start}-0` : '-'
    const hi = q.end !== undefined ? `${q.end}-${MAX_SEQ}` : '+'
    const entries =
      q.direction === 'forwards'
        ? await this.send<Array<[string, string[]]>>([
            'XRANGE',
            key,
            q.after ? `(${streamId(q.after)}` : lo,
            q.until ? streamId(q.until) : hi,
            'COUNT',
            String(q.limit),
          ])
        : await this.send<Array<[string, string[]]>>([
            'XREVRANGE',
            key,
            q.after ? `(${streamId(q.after)}` : hi,
            lo,
            'COUNT',
            String(q.limit),
          ])
    return entries
      .map(([eid, fields]) => toChange(id, eid, fields))
      .filter((c) => (q.start === undefined || c.timestamp >= q.start) && (q.end === undefined || c.timestamp <= q.end))
  }

  async close() {}
}

function toChange(objectId: string, id: string, fields: string[]): ObjectChange {
  const f = new Map<string, string>()
  for (let i = 0; i < fields.length; i += 2) f.set(fields[i]!, fields[i + 1]!)
  const [ts, version] = id.split('-')
  const c: ObjectChange = {
    objectId,
    action: f.get('a') === 'delete' ? 'delete' : 'update',
    version: version!,
    timestamp: Number(ts),
  }
  if (f.has('p')) c.patch = JSON.parse(f.get('p')!)
  if (f.has('d')) c.data = stateOf(f.get('d')!)
  return c
}
