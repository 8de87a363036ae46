import type { Database } from 'bun:sqlite'
import type { Clock } from '../../core/ports'
import type { TokenRevocation } from '../../core/types'
import { CachedRevocationStore } from '../shared/cached-revocation-store'

type Row = { key_name: string; target: string; issued_before: number; applies_at: number; expires: number }

/**
 * Token revocations of the embedded backend: in memory, written through to SQLite so a restart
 * forgets none still in force. Expired rows are deleted when revocations are added and at start.
 */
export class SqliteRevocationStore extends CachedRevocationStore {
  private readonly purge
  private readonly write: (rs: TokenRevocation[]) => void

  constructor(
    db: Database,
    private readonly clock: Clock,
  ) {
    super()
    db.exec(`CREATE TABLE IF NOT EXISTS token_revocations (
      key_name TEXT NOT NULL, target TEXT NOT NULL, issued_before INTEGER NOT NULL, applies_at INTEGER NOT NULL,
      expires INTEGER NOT NULL, PRIMARY KEY (key_name, target, issued_before, applies_at)) WITHOUT ROWID`)
    const insert = db.prepare(
      'INSERT OR IGNORE INTO token_revocations (key_name, target, issued_before, applies_at, expires) VALUES (?, ?, ?, ?, ?)',
    )
    this.purge = db.prepare('DELETE FROM token_revocations WHERE expires <= ?')
    this.write = db.transaction((rs: TokenRevocation[]) => {
      this.purge.run(this.clock.now())
      for (const r of rs) insert.run(r.keyName, r.target, r.issuedBefore, r.appliesAt, r.expires)
    })
    this.purge.run(clock.now())
    const rows = db.query('SELECT * FROM token_revocations').all() as Row[]
    this.apply(
      rows.map((r) => ({
        keyName: r.key_name,
        target: r.target,
        issuedBefore: r.issued_before,
        appliesAt: r.applies_at,
        expires: r.expires,
      })),
    )
  }

  /** One transaction: every revocation of a request is stored, or none. */
  protected async persist(rs: TokenRevocation[]) {
    this.write(rs)
  }
}
