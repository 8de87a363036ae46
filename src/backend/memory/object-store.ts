import type { Database } from 'bun:sqlite'
import { utf8Length } from '../../lib/encoding'
import type { Clock } from '../../core/ports'
import { mergePatch } from '../../core/objects/merge'
import {
  MAX_OBJECT_BYTES,
  OBJECT_HISTORY_MAX,
  type JsonObject,
  type NamespaceSummary,
  type ObjectChange,
  type ObjectHistoryQuery,
  type ObjectState,
  type ObjectStore,
  type UpdateOptions,
  type UpdateOutcome,
} from '../../core/objects/ports'

export interface SqliteObjectStoreSettings {
  historyTtlMs: number
}

interface StateRow {
  id: string
  data: string
  version: number
  ts: number
}
interface ChangeRow {
  version: number
  id: string
  ts: number
  action: 'update' | 'delete'
  patch: string | null
  data: string | null
}

const SWEEP_MS = 60_000

/**
 * LiveObjects in SQLite (single node): every operation is one synchronous transaction, so it is
 * atomic by construction. A version is the AUTOINCREMENT row id of the change in
 * `object_history`, hence never reused, even after a delete and a re-create.
 */
export class SqliteObjectStore implements ObjectStore {
  private readonly stmt
  private readonly sweeper: ReturnType<typeof setInterval>

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly s: SqliteObjectStoreSettings,
  ) {
    db.exec(`CREATE TABLE IF NOT EXISTS object_state (
      app TEXT NOT NULL, ns TEXT NOT NULL, id TEXT NOT NULL, data TEXT NOT NULL, version INTEGER NOT NULL, ts INTEGER NOT NULL,
      PRIMARY KEY (app, ns, id)) WITHOUT ROWID`)
    db.exec(`CREATE TABLE IF NOT EXISTS object_history (
      version INTEGER PRIMARY KEY AUTOINCREMENT, app TEXT NOT NULL, ns TEXT NOT NULL, id TEXT NOT NULL, ts INTEGER NOT NULL,
      action TEXT NOT NULL, patch TEXT, data TEXT)`)
    db.exec('CREATE INDEX IF NOT EXISTS object_history_object ON object_history (app, ns, id, version)')
    db.exec('CREATE INDEX IF NOT EXISTS object_history_ts ON object_history (ts)')
    db.exec(`CREATE TABLE IF NOT EXISTS object_namespaces (
      app TEXT NOT NULL, ns TEXT NOT NULL, count INTEGER NOT NULL, last_activity INTEGER NOT NULL,
      PRIMARY KEY (app, ns)) WITHOUT ROWID`)
    this.stmt = {
      get: db.prepare('SELECT id, data, version, ts FROM object_state WHERE app = ? AND ns = ? AND id = ?'),
      list: db.prepare(
        'SELECT id, data, version, ts FROM object_state WHERE app = ? AND ns = ? AND id >= ? AND id > ? ORDER BY id LIMIT ?',
      ),
      upsert: db.prepare(
        'INSERT OR REPLACE INTO object_state (app, ns, id, data, version, ts) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      remove: db.prepare('DELETE FROM object_state WHERE app = ? AND ns = ? AND id = ?'),
      lastTs: db.prepare(
        'SELECT ts FROM object_history WHERE app = ? AND ns = ? AND id = ? ORDER BY version DESC LIMIT 1',
      ),
      append: db.prepare(
        'INSERT INTO object_history (app, ns, id, ts, action, patch, data) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      trim: db.prepare(`DELETE FROM object_history WHERE app = ?1 AND ns = ?2 AND id = ?3 AND version <= (
        SELECT version FROM object_history WHERE app = ?1 AND ns = ?2 AND id = ?3 ORDER BY version DESC LIMIT 1 OFFSET ?4)`),
      prune: db.prepare('DELETE FROM object_history WHERE ts < ?'),
      ns: db.prepare('SELECT ns, count, last_activity FROM object_namespaces WHERE app = ? AND ns = ?'),
      nsList: db.prepare(
        'SELECT ns, count, last_activity FROM object_namespaces WHERE app = ? AND ns > ? ORDER BY ns LIMIT ?',
      ),
      nsAdd: db.prepare(`INSERT INTO object_namespaces (app, ns, count, last_activity) VALUES (?1, ?2, ?3, ?4)
        ON CONFLICT (app, ns) DO UPDATE SET count = count + ?3, last_activity = ?4`),
      nsDropEmpty: db.prepare('DELETE FROM object_namespaces WHERE app = ? AND ns = ? AND count <= 0'),
    }
    this.sweeper = setInterval(() => this.sweep(), SWEEP_MS)
    this.sweeper.unref?.()
  }

  async get(app: string, ns: string, id: string): Promise<ObjectState | undefined> {
    const row = this.stmt.get.get(app, ns, id) as StateRow | null
    return row ? toState(row) : undefined
  }

  async list(app: string, ns: string, q: { prefix: string; after?: string; limit: number }): Promise<ObjectState[]> {
    const rows = this.stmt.list.all(app, ns, q.prefix, q.after ?? '', q.limit) as StateRow[]
    const end = rows.findIndex((r) => !r.id.startsWith(q.prefix))
    return (end < 0 ? rows : rows.slice(0, end)).map(toState)
  }

  async namespaces(app: string, q: { after?: string; limit: number }): Promise<NamespaceSummary[]> {
    return (this.stmt.nsList.all(app, q.after ?? '', q.limit) as NsRow[]).map(toSummary)
  }

  async namespace(app: string, ns: string): Promise<NamespaceSummary | undefined> {
    const row = this.stmt.ns.get(app, ns) as NsRow | null
    return row ? toSummary(row) : undefined
  }

  async update(app: string, ns: string, id: string, patch: JsonObject, opts: UpdateOptions): Promise<UpdateOutcome> {
    return this.db.transaction((): UpdateOutcome => {
      const cur = this.stmt.get.get(app, ns, id) as StateRow | null
      if (opts.expectedVersion !== undefined && (!cur || String(cur.version) !== opts.expectedVersion)) {
        return { kind: 'conflict', currentVersion: cur ? String(cur.version) : undefined }
      }
      const data = mergePatch(cur ? JSON.parse(cur.data) : {}, patch) as JsonObject
      const text = JSON.stringify(data)
      const size = utf8Length(text)
      if (size > MAX_OBJECT_BYTES) return { kind: 'too-large', size }
      const ts = this.timestamp(app, ns, id, Math.max(opts.now, cur?.ts ?? 0))
      const version = this.append(app, ns, id, ts, 'update', JSON.stringify(patch), text)
      this.stmt.upsert.run(app, ns, id, text, version, ts)
      this.stmt.nsAdd.run(app, ns, cur ? 0 : 1, ts)
      return { kind: 'updated', created: !cur, state: { objectId: id, data, version: String(version), timestamp: ts } }
    })()
  }

  async delete(app: string, ns: string, id: string, now: number): Promise<ObjectChange | undefined> {
    return this.db.transaction((): ObjectChange | undefined => {
      const cur = this.stmt.get.get(app, ns, id) as StateRow | null
      if (!cur) return undefined
      const ts = this.timestamp(app, ns, id, Math.max(now, cur.ts))
      const version = this.append(app, ns, id, ts, 'delete', null, null)
      this.stmt.remove.run(app, ns, id)
      this.stmt.nsAdd.run(app, ns, -1, ts)
      this.stmt.nsDropEmpty.run(app, ns)
      return { objectId: id, action: 'delete', version: String(version), timestamp: ts }
    })()
  }

  async history(app: string, ns: string, id: string, q: ObjectHistoryQuery): Promise<ObjectChange[]> {
    const fwd = q.direction === 'forwards'
    let cursor = q.after === undefined ? '' : fwd ? 'AND version > $after' : 'AND version < $after'
    if (fwd && q.until !== undefined) cursor += ' AND version <= $until'
    const sql = `SELECT version, id, ts, action, patch, data FROM object_history
      WHERE app = $app AND ns = $ns AND id = $id AND ts >= $start AND ts <= $end ${cursor}
      ORDER BY version ${fwd ? 'ASC' : 'DESC'} LIMIT $limit`
    const params: Record<string, string | number> = {
      app,
      ns,
      id,
      start: Math.max(q.start ?? 0, this.clock.now() - this.s.historyTtlMs),
      end: q.end ?? Number.MAX_SAFE_INTEGER,
      limit: q.limit,
    }
    if (q.after !== undefined) params.after = Number(q.after.version)
    if (fwd && q.until !== undefined) params.until = Number(q.until.version)
    return (this.db.query(sql).all(params as any) as ChangeRow[]).map(toChange)
  }

  /** Timestamps of an object never go backwards (history is ordered by version and by time). */
  private timestamp(app: string, ns: string, id: string, now: number): number {
    const last = this.stmt.lastTs.get(app, ns, id) as { ts: number } | null
    return Math.max(now, last?.ts ?? 0)
  }

  private append(
    app: string,
    ns: string,
    id: string,
    ts: number,
    action: string,
    patch: string | null,
    data: string | null,
  ): number {
    const version = Number(this.stmt.append.run(app, ns, id, ts, action, patch, data).lastInsertRowid)
    this.stmt.trim.run(app, ns, id, OBJECT_HISTORY_MAX)
    return version
  }

  /** Drops changes older than the retention window. */
  sweep(): void {
    this.stmt.prune.run(this.clock.now() - this.s.historyTtlMs)
  }

  async close() {
    clearInterval(this.sweeper)
  }
}

interface NsRow {
  ns: string
  count: number
  last_activity: number
}

const toSummary = (r: NsRow): NamespaceSummary => ({
  namespaceId: r.ns,
  objectCount: r.count,
  lastActivity: r.last_activity,
})
const toState = (r: StateRow): ObjectState => ({
  objectId: r.id,
  data: JSON.parse(r.data),
  version: String(r.version),
  timestamp: r.ts,
})

function toChange(r: ChangeRow): ObjectChange {
  const c: ObjectChange = { objectId: r.id, action: r.action, version: String(r.version), timestamp: r.ts }
  if (r.patch !== null) c.patch = JSON.parse(r.patch)
  if (r.data !== null) c.data = JSON.parse(r.data)
  return c
}
