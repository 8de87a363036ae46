import type { Database } from 'bun:sqlite'
import { randomSecret } from '../../lib/crypto'
import type { BootstrapOutcome, BootstrapSeed } from '../../core/ports'
import { CONTROL_KINDS, CachedControlStore, type ControlKind, type ControlRecord } from '../shared/cached-control-store'

/** Control records in memory, written through to SQLite (`records` table): a restart loses nothing. */
export class SqliteControlStore extends CachedControlStore {
  private upsert
  private remove

  constructor(private readonly db: Database) {
    super()
    for (const row of db.query('SELECT kind, id, body FROM records').all() as {
      kind: ControlKind
      id: string
      body: string
    }[]) {
      if (CONTROL_KINDS.includes(row.kind)) this.apply(row.kind, row.id, JSON.parse(row.body), { kind: 'account' })
    }
    this.upsert = db.prepare('INSERT OR REPLACE INTO records (kind, id, parent, body) VALUES (?, ?, ?, ?)')
    this.remove = db.prepare('DELETE FROM records WHERE kind = ? AND id = ?')
  }

  protected async persist(r: ControlRecord) {
    if (r.value === undefined) this.remove.run(r.kind, r.id)
    else this.upsert.run(r.kind, r.id, r.parent, JSON.stringify(r.value))
  }

  /** The epoch lives beside the records (kind `meta`, which the cache does not load). */
  private readEpoch(): string | undefined {
    const row = this.db.query(`SELECT body FROM records WHERE kind = 'meta' AND id = 'epoch'`).get() as {
      body: string
    } | null
    return row ? (JSON.parse(row.body) as string) : undefined
  }

  async bootstrap(seed: BootstrapSeed): Promise<BootstrapOutcome> {
    const records = this.seedRecords(seed)
    // immediate, as secret(): a read that may be followed by a write takes the write lock first, so
    // that nodes starting together on one DATA_DIR wait for it instead of failing on the upgrade
    const outcome = this.db
      .transaction((): BootstrapOutcome => {
        const epoch = this.readEpoch()
        if (epoch !== undefined) return { status: 'existing', epoch }
        const accounts = this.db.query(`SELECT count(*) AS n FROM records WHERE kind = 'account'`).get() as {
          n: number
        }
        if (accounts.n === 0) for (const r of records) this.upsert.run(r.kind, r.id, r.parent, JSON.stringify(r.value))
        this.upsert.run('meta', 'epoch', '', JSON.stringify(seed.epoch))
        return { status: accounts.n === 0 ? 'seeded' : 'existing', epoch: seed.epoch }
      })
      .immediate()
    if (outcome.status === 'seeded') for (const r of records) this.apply(r.kind, r.id, r.value, r.event)
    return outcome
  }

  async epoch() {
    return this.readEpoch()
  }

  async secret() {
    return this.db
      .transaction((): string => {
        const row = this.db.query(`SELECT body FROM records WHERE kind = 'meta' AND id = 'secret'`).get() as {
          body: string
        } | null
        if (row) return JSON.parse(row.body) as string
        const made = randomSecret()
        this.upsert.run('meta', 'secret', '', JSON.stringify(made))
        return made
      })
      .immediate()
  }

  /** A SQLite file does not lose its data under a running node: nothing to record. */
  async markDataLost() {}

  async ready() {
    return true
  }
  async close() {}
}
