import type { Database } from 'bun:sqlite'
import type { Clock } from '../../core/ports'
import type { LiveObjectBatch, LiveObjectStore, LivePublishOptions } from '../../core/objects/ports'
import { applyOps, emptyRoot, serialToken, settleSerials, type LiveObjectRecord } from '../../core/objects/live-state'
import { ROOT } from '../../core/objects/live-wire'
import type { MemoryBroker } from './broker'

/** Channels whose object count is kept in memory at most (the others are counted again when used). */
const MAX_COUNTED = 10_000

/**
 * The plugin's LiveObjects on the embedded node: records in SQLite (always durable: a channel's
 * objects outlive its messages), and a publish that runs in one synchronous turn: check and apply
 * on copies, append the log entries (the broker's own sequence, delivered at once), write the
 * records, so no read or other publish comes between.
 */
export class SqliteLiveObjectStore implements LiveObjectStore {
  private readonly stmt
  /** Objects per channel besides root (`<app>\0<channel>`). */
  private readonly counts = new Map<string, number>()

  constructor(
    private readonly db: Database,
    private readonly broker: MemoryBroker,
    private readonly clock: Clock,
  ) {
    db.exec(`CREATE TABLE IF NOT EXISTS live_objects (
      app TEXT NOT NULL, channel TEXT NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL,
      PRIMARY KEY (app, channel, id)) WITHOUT ROWID`)
    this.stmt = {
      get: db.prepare('SELECT body FROM live_objects WHERE app = ? AND channel = ? AND id = ?'),
      all: db.prepare('SELECT body FROM live_objects WHERE app = ? AND channel = ?'),
      count: db.prepare("SELECT count(*) AS n FROM live_objects WHERE app = ? AND channel = ? AND id <> 'root'"),
      put: db.prepare('INSERT OR REPLACE INTO live_objects (app, channel, id, body) VALUES (?, ?, ?, ?)'),
      remove: db.prepare('DELETE FROM live_objects WHERE app = ? AND channel = ? AND id = ?'),
    }
  }

  private get(app: string, channel: string, id: string): LiveObjectRecord | undefined {
    const row = this.stmt.get.get(app, channel, id) as { body: string } | null
    return row ? (JSON.parse(row.body) as LiveObjectRecord) : undefined
  }

  private count(app: string, channel: string): number {
    const k = `${app}\u0000${channel}`
    let n = this.counts.get(k)
    if (n === undefined) {
      n = (this.stmt.count.get(app, channel) as { n: number }).n
      if (this.counts.size >= MAX_COUNTED) this.counts.clear()
      this.counts.set(k, n)
    }
    return n
  }

  async publish(app: string, channel: string, batch: LiveObjectBatch, opts: LivePublishOptions): Promise<string[]> {
    const target = { get: (id: string) => this.get(app, channel, id), count: () => this.count(app, channel) }
    const tokens = batch.ops.map((_, i) => serialToken(i))
    const { changed, added } = applyOps(target, batch.ops, tokens, this.clock.now(), opts.limits)
    const r = this.broker.publishNow(app, channel, batch.drafts, opts)
    if (r.appended === 0) return r.serials // a retry of a publish already applied
    settleSerials(changed, r.serials, batch.drafts[0]!.timestamp ?? this.clock.now())
    this.db.transaction(() => {
      for (const rec of changed) this.stmt.put.run(app, channel, rec.objectId, JSON.stringify(rec))
    })()
    const k = `${app}\u0000${channel}`
    const n = this.counts.get(k)
    if (n !== undefined) this.counts.set(k, n + added)
    return r.serials
  }

  async remove(app: string, channel: string, ids: string[]): Promise<void> {
    this.db.transaction(() => {
      for (const id of ids) this.stmt.remove.run(app, channel, id)
    })()
    this.counts.delete(`${app}\u0000${channel}`)
  }

  async snapshot(app: string, channel: string): Promise<LiveObjectRecord[]> {
    const rows = this.stmt.all.all(app, channel) as Array<{ body: string }>
    const recs = rows.map((r) => JSON.parse(r.body) as LiveObjectRecord)
    const root = recs.findIndex((r) => r.objectId === ROOT)
    const first = root >= 0 ? recs.splice(root, 1)[0]! : emptyRoot()
    return [first, ...recs]
  }
}
