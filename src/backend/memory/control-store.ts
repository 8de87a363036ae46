import type { Database } from 'bun:sqlite'
import { CONTROL_KINDS, CachedControlStore, type ControlKind, type ControlRecord } from '../shared/cached-control-store'

/** Control records in memory, written through to SQLite (`records` table): a restart loses nothing. */
export class SqliteControlStore extends CachedControlStore {
  private upsert
  private remove

  constructor(db: Database) {
    super()
    for (const row of db.query('SELECT kind, id, body FROM records').all() as { kind: ControlKind; id: string; body: string }[]) {
      if (CONTROL_KINDS.includes(row.kind)) this.apply(row.kind, row.id, JSON.parse(row.body), { kind: 'account' })
    }
    this.upsert = db.prepare('INSERT OR REPLACE INTO records (kind, id, parent, body) VALUES (?, ?, ?, ?)')
    this.remove = db.prepare('DELETE FROM records WHERE kind = ? AND id = ?')
  }

  protected async persist(r: ControlRecord) {
    if (r.value === undefined) this.remove.run(r.kind, r.id)
    else this.upsert.run(r.kind, r.id, r.parent, JSON.stringify(r.value))
  }

  async ready() { return true }
  async close() {}
}
