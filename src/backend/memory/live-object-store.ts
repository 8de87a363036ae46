import type { Database } from 'bun:sqlite'
import type { Clock, SyncAppend } from '../../core/ports'
import type { LiveObjectBatch, LiveObjectStore, LivePublishOptions } from '../../core/objects/ports'
import {
  applyOps,
  emptyRoot,
  fromLegacy,
  recordOf,
  serialToken,
  settleSerials,
  type LiveChanges,
  type LiveHead,
  type LiveObjectRecord,
  type StoredEntry,
} from '../../core/objects/live-state'
import { ROOT } from '../../core/objects/live-wire'

/** Channels whose object count and size are kept in memory at most (the others are summed again when used). */
const MAX_COUNTED = 10_000

interface Totals {
  /** Objects besides root. */
  n: number
  /** Their total size (live-size.ts). */
  bytes: number
}

/**
 * The plugin's LiveObjects on the embedded node, in SQLite (always durable: a channel's objects
 * outlive its messages): a row per object head and a row per map entry, so a write reads and
 * writes the entries it names, never the whole map. A publish runs in one synchronous turn: check
 * and apply on copies, append the log entries (the broker's own sequence, delivered at once),
 * write the rows, so no read or other publish comes between.
 */
export class SqliteLiveObjectStore implements LiveObjectStore {
  private readonly stmt
  /** Objects per channel besides root, and their size (`<app>\0<channel>`). */
  private readonly totals = new Map<string, Totals>()

  constructor(
    private readonly db: Database,
    /** The channel log's synchronous append (the embedded broker's). */
    private readonly log: SyncAppend,
    private readonly clock: Clock,
  ) {
    db.exec(`CREATE TABLE IF NOT EXISTS live_heads (
      app TEXT NOT NULL, channel TEXT NOT NULL, id TEXT NOT NULL, bytes INTEGER NOT NULL, body TEXT NOT NULL,
      PRIMARY KEY (app, channel, id)) WITHOUT ROWID`)
    db.exec(`CREATE TABLE IF NOT EXISTS live_entries (
      app TEXT NOT NULL, channel TEXT NOT NULL, id TEXT NOT NULL, key TEXT NOT NULL, body TEXT NOT NULL,
      PRIMARY KEY (app, channel, id, key)) WITHOUT ROWID`)
    this.stmt = {
      head: db.prepare('SELECT body FROM live_heads WHERE app = ? AND channel = ? AND id = ?'),
      heads: db.prepare('SELECT body FROM live_heads WHERE app = ? AND channel = ?'),
      entry: db.prepare('SELECT body FROM live_entries WHERE app = ? AND channel = ? AND id = ? AND key = ?'),
      entries: db.prepare('SELECT id, key, body FROM live_entries WHERE app = ? AND channel = ? ORDER BY id'),
      totals: db.prepare(
        "SELECT count(*) AS n, coalesce(sum(bytes), 0) AS bytes FROM live_heads WHERE app = ? AND channel = ? AND id <> 'root'",
      ),
      rootBytes: db.prepare("SELECT bytes FROM live_heads WHERE app = ? AND channel = ? AND id = 'root'"),
      putHead: db.prepare('INSERT OR REPLACE INTO live_heads (app, channel, id, bytes, body) VALUES (?, ?, ?, ?, ?)'),
      putEntry: db.prepare('INSERT OR REPLACE INTO live_entries (app, channel, id, key, body) VALUES (?, ?, ?, ?, ?)'),
      clear: db.prepare('DELETE FROM live_entries WHERE app = ? AND channel = ? AND id = ?'),
      removeHead: db.prepare('DELETE FROM live_heads WHERE app = ? AND channel = ? AND id = ?'),
      removeEntry: db.prepare('DELETE FROM live_entries WHERE app = ? AND channel = ? AND id = ? AND key = ?'),
    }
    this.migrate()
  }

  /**
   * The earlier layout (one row per object, its entries inside: every write rewrote the map) is
   * moved to rows per entry once, at start.
   */
  private migrate() {
    const old = this.db
      .query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'live_objects'")
      .get() as { name: string } | null
    if (!old) return
    this.db.transaction(() => {
      const rows = this.db.query('SELECT app, channel, body FROM live_objects').all() as Array<{
        app: string
        channel: string
        body: string
      }>
      for (const row of rows) {
        const { head, entries } = fromLegacy(JSON.parse(row.body) as LiveObjectRecord)
        this.writeHead(row.app, row.channel, head)
        for (const [k, e] of entries) this.stmt.putEntry.run(row.app, row.channel, head.objectId, k, JSON.stringify(e))
      }
      this.db.exec('DROP TABLE live_objects')
    })()
  }

  private writeHead(app: string, channel: string, h: LiveHead) {
    this.stmt.putHead.run(app, channel, h.objectId, h.bytes ?? 0, JSON.stringify(h))
  }

  private head(app: string, channel: string, id: string): LiveHead | undefined {
    const row = this.stmt.head.get(app, channel, id) as { body: string } | null
    return row ? (JSON.parse(row.body) as LiveHead) : undefined
  }

  private entry(app: string, channel: string, id: string, key: string): StoredEntry | undefined {
    const row = this.stmt.entry.get(app, channel, id, key) as { body: string } | null
    return row ? (JSON.parse(row.body) as StoredEntry) : undefined
  }

  /** Objects besides root and the size of them all (root included). */
  private totalsOf(app: string, channel: string): Totals {
    const k = `${app}\u0000${channel}`
    let t = this.totals.get(k)
    if (t === undefined) {
      const others = this.stmt.totals.get(app, channel) as Totals
      const root = this.stmt.rootBytes.get(app, channel) as { bytes: number } | null
      t = { n: others.n, bytes: others.bytes + (root?.bytes ?? 0) }
      if (this.totals.size >= MAX_COUNTED) this.totals.clear()
      this.totals.set(k, t)
    }
    return t
  }

  async publish(app: string, channel: string, batch: LiveObjectBatch, opts: LivePublishOptions): Promise<string[]> {
    const target = {
      head: (id: string) => this.head(app, channel, id),
      entry: (id: string, key: string) => this.entry(app, channel, id, key),
      count: () => this.totalsOf(app, channel).n,
      bytes: () => this.totalsOf(app, channel).bytes,
    }
    const tokens = batch.ops.map((_, i) => serialToken(i))
    const changes = applyOps(target, batch.ops, tokens, this.clock.now(), opts.limits)
    const r = this.log.publishNow(app, channel, batch.drafts, opts)
    if (r.appended === 0) return r.serials // a retry of a publish already applied
    settleSerials(changes, r.serials, batch.drafts[0]!.timestamp ?? this.clock.now())
    this.write(app, channel, changes)
    return r.serials
  }

  private write(app: string, channel: string, c: LiveChanges) {
    this.db.transaction(() => {
      for (const h of c.heads) this.writeHead(app, channel, h)
      for (const id of c.cleared) this.stmt.clear.run(app, channel, id)
      for (const { objectId, key, entry } of c.entries)
        this.stmt.putEntry.run(app, channel, objectId, key, JSON.stringify(entry))
    })()
    const t = this.totals.get(`${app}\u0000${channel}`)
    if (t !== undefined) {
      t.n += c.added
      t.bytes += c.bytes
    }
  }

  async remove(app: string, channel: string, ids: string[]): Promise<void> {
    this.db.transaction(() => {
      for (const id of ids) {
        this.stmt.removeHead.run(app, channel, id)
        this.stmt.clear.run(app, channel, id)
      }
    })()
    this.totals.delete(`${app}\u0000${channel}`)
  }

  async removeEntries(
    app: string,
    channel: string,
    entries: Array<{ objectId: string; key: string; timeserial: string }>,
  ): Promise<void> {
    this.db.transaction(() => {
      for (const { objectId, key, timeserial } of entries) {
        const e = this.entry(app, channel, objectId, key)
        if (e?.tombstone && e.timeserial === timeserial) this.stmt.removeEntry.run(app, channel, objectId, key)
      }
    })()
  }

  async snapshot(app: string, channel: string): Promise<LiveObjectRecord[]> {
    // one synchronous turn: every row as of one point of the channel's sequence
    const heads = (this.stmt.heads.all(app, channel) as Array<{ body: string }>).map(
      (r) => JSON.parse(r.body) as LiveHead,
    )
    const byObject = new Map<string, Array<[string, StoredEntry]>>()
    for (const row of this.stmt.entries.all(app, channel) as Array<{ id: string; key: string; body: string }>) {
      let list = byObject.get(row.id)
      if (!list) byObject.set(row.id, (list = []))
      list.push([row.key, JSON.parse(row.body) as StoredEntry])
    }
    const recs = heads.map((h) => recordOf(h, byObject.get(h.objectId) ?? []))
    const root = recs.findIndex((r) => r.objectId === ROOT)
    const first = root >= 0 ? recs.splice(root, 1)[0]! : emptyRoot()
    return [first, ...recs]
  }
}
