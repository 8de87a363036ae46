import type { Database } from 'bun:sqlite'
import { pack, unpack } from 'msgpackr'
import {
  TooManyAnnotations,
  type Annotation,
  type AnnotationStateOp,
  type AnnotationStore,
  type LiveOnlyKind,
  type LiveOnlyMarks,
} from '../../core/channels/ports'

const PRUNE_EVERY_MS = 60_000

/**
 * Annotations of the embedded backend, in SQLite (they survive a restart as persisted history
 * does): one row per annotation (numbered per message) and one per summary field; each change and
 * each record is one transaction.
 */
export class SqliteAnnotationStore implements AnnotationStore {
  private readonly q
  private lastPrune = 0

  constructor(
    private readonly db: Database,
    private readonly retentionMs: number,
  ) {
    db.exec(`CREATE TABLE IF NOT EXISTS annotation_log (
      app TEXT NOT NULL, channel TEXT NOT NULL, serial TEXT NOT NULL, seq INTEGER NOT NULL, body BLOB NOT NULL, ts INTEGER NOT NULL,
      PRIMARY KEY (app, channel, serial, seq)) WITHOUT ROWID`)
    db.exec(`CREATE TABLE IF NOT EXISTS annotation_state (
      app TEXT NOT NULL, channel TEXT NOT NULL, serial TEXT NOT NULL, field TEXT NOT NULL, value TEXT NOT NULL, ts INTEGER NOT NULL,
      PRIMARY KEY (app, channel, serial, field)) WITHOUT ROWID`)
    // when a message's state was last changed (one row per message: changing a field of a message
    // at the entry cap rewrote 1,000 rows and their index entries, 41 ms of a blocked event loop)
    db.exec(`CREATE TABLE IF NOT EXISTS annotation_touch (
      app TEXT NOT NULL, channel TEXT NOT NULL, serial TEXT NOT NULL, ts INTEGER NOT NULL,
      PRIMARY KEY (app, channel, serial)) WITHOUT ROWID`)
    // a channel's newest live-only serial of each kind (mark)
    db.exec(`CREATE TABLE IF NOT EXISTS live_only_mark (
      app TEXT NOT NULL, channel TEXT NOT NULL, kind TEXT NOT NULL, serial TEXT NOT NULL, ts INTEGER NOT NULL,
      PRIMARY KEY (app, channel, kind)) WITHOUT ROWID`)
    db.exec('CREATE INDEX IF NOT EXISTS annotation_log_ts ON annotation_log (ts)')
    db.exec('CREATE INDEX IF NOT EXISTS annotation_state_ts ON annotation_state (ts)')
    db.exec('CREATE INDEX IF NOT EXISTS annotation_touch_ts ON annotation_touch (ts)')
    this.q = {
      lastSeq: db.prepare('SELECT MAX(seq) AS n FROM annotation_log WHERE app = ? AND channel = ? AND serial = ?'),
      firstSeq: db.prepare('SELECT MIN(seq) AS n FROM annotation_log WHERE app = ? AND channel = ? AND serial = ?'),
      log: db.prepare('INSERT INTO annotation_log (app, channel, serial, seq, body, ts) VALUES (?, ?, ?, ?, ?, ?)'),
      trim: db.prepare('DELETE FROM annotation_log WHERE app = ? AND channel = ? AND serial = ? AND seq <= ?'),
      list: db.prepare(
        'SELECT body FROM annotation_log WHERE app = ? AND channel = ? AND serial = ? ORDER BY seq LIMIT ? OFFSET ?',
      ),
      field: db.prepare(
        'SELECT value FROM annotation_state WHERE app = ? AND channel = ? AND serial = ? AND field = ?',
      ),
      fields: db.prepare('SELECT COUNT(*) AS n FROM annotation_state WHERE app = ? AND channel = ? AND serial = ?'),
      put: db.prepare(
        'INSERT OR REPLACE INTO annotation_state (app, channel, serial, field, value, ts) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      del: db.prepare('DELETE FROM annotation_state WHERE app = ? AND channel = ? AND serial = ? AND field = ?'),
      touch: db.prepare('INSERT OR REPLACE INTO annotation_touch (ts, app, channel, serial) VALUES (?, ?, ?, ?)'),
      state: db.prepare('SELECT field, value FROM annotation_state WHERE app = ? AND channel = ? AND serial = ?'),
      mark: db.prepare(
        `INSERT INTO live_only_mark (app, channel, kind, serial, ts) VALUES (?, ?, ?, ?, ?)
          ON CONFLICT (app, channel, kind) DO UPDATE SET serial = max(serial, excluded.serial), ts = excluded.ts`,
      ),
      marks: db.prepare('SELECT kind, serial FROM live_only_mark WHERE app = ? AND channel = ?'),
    }
  }

  async change(
    app: string,
    channel: string,
    s: string,
    op: AnnotationStateOp,
    maxFields: number,
    now: number,
  ): Promise<{ before?: string }> {
    this.prune(now)
    return this.db.transaction(() => {
      const cur = (this.q.field.get(app, channel, s, op.field) as { value: string } | null)?.value
      let next: string | undefined
      if (op.op === 'set') next = op.value
      else if (op.op === 'incr') {
        const n = Number(cur ?? 0) + op.by
        next = n > 0 ? String(n) : undefined
      }
      if (
        next !== undefined &&
        cur === undefined &&
        (this.q.fields.get(app, channel, s) as { n: number }).n >= maxFields
      )
        throw new TooManyAnnotations()
      if (next === undefined) this.q.del.run(app, channel, s, op.field)
      else this.q.put.run(app, channel, s, op.field, next, now)
      this.q.touch.run(now, app, channel, s)
      return cur === undefined ? {} : { before: cur }
    })()
  }

  async record(app: string, channel: string, a: Annotation, maxLog: number): Promise<void> {
    this.prune(a.timestamp)
    const s = a.messageSerial
    this.db.transaction(() => {
      const seq = ((this.q.lastSeq.get(app, channel, s) as { n: number | null }).n ?? 0) + 1
      this.q.log.run(app, channel, s, seq, pack(a), a.timestamp)
      if (seq > maxLog) this.q.trim.run(app, channel, s, seq - maxLog)
    })()
  }

  private stateOf(app: string, channel: string, serial: string): Record<string, string> {
    const out: Record<string, string> = {}
    for (const r of this.q.state.all(app, channel, serial) as { field: string; value: string }[]) out[r.field] = r.value
    return out
  }

  async current(
    app: string,
    channel: string,
    serial: string,
  ): Promise<{ state: Record<string, string>; version: number }> {
    const version = (this.q.lastSeq.get(app, channel, serial) as { n: number | null }).n ?? 0
    return { state: this.stateOf(app, channel, serial), version }
  }

  async states(app: string, channel: string, serials: string[]): Promise<Map<string, Record<string, string>>> {
    const out = new Map<string, Record<string, string>>()
    for (const serial of serials) {
      const state = this.stateOf(app, channel, serial)
      if (Object.keys(state).length) out.set(serial, state)
    }
    return out
  }

  async list(app: string, channel: string, serial: string, offset: number, limit: number): Promise<Annotation[]> {
    return (this.q.list.all(app, channel, serial, limit, offset) as { body: Uint8Array }[]).map(
      (r) => unpack(r.body) as Annotation,
    )
  }

  async mark(app: string, channel: string, kind: LiveOnlyKind, serial: string, now: number): Promise<void> {
    this.prune(now)
    this.q.mark.run(app, channel, kind, serial, now)
  }

  async marks(app: string, channel: string): Promise<LiveOnlyMarks> {
    const out: LiveOnlyMarks = {}
    for (const r of this.q.marks.all(app, channel) as { kind: LiveOnlyKind; serial: string }[]) out[r.kind] = r.serial
    return out
  }

  private prune(now: number) {
    if (now - this.lastPrune < PRUNE_EVERY_MS) return
    this.lastPrune = now
    const before = now - this.retentionMs
    this.db.prepare('DELETE FROM annotation_log WHERE ts < ?').run(before)
    // a message's fields go together, once none of them changed for the retention
    this.db
      .prepare(
        `DELETE FROM annotation_state WHERE ts < ?1 AND NOT EXISTS (SELECT 1 FROM annotation_touch t
          WHERE t.app = annotation_state.app AND t.channel = annotation_state.channel AND t.serial = annotation_state.serial AND t.ts >= ?1)`,
      )
      .run(before)
    this.db.prepare('DELETE FROM annotation_touch WHERE ts < ?').run(before)
    this.db.prepare('DELETE FROM live_only_mark WHERE ts < ?').run(before)
  }
}
