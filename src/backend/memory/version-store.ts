import type { Database } from 'bun:sqlite'
import { pack, unpack } from 'msgpackr'
import type { VersionQuery, VersionRecord, VersionStore, VersionWrite } from '../../core/channels/ports'
import type { Clock } from '../../core/ports'
import type { Message } from '../../core/types'

const PRUNE_EVERY_MS = 60_000

type Row = { latest: Uint8Array; n: number; ts: number }

/**
 * Versions of mutable messages in SQLite, beside the persisted history of their channels, so
 * changes survive a restart as messages do: one row per changed message (its latest version, the
 * newest version serial and the count) and one per version. Each put is one transaction. A
 * message's rows go once it has not been written for the retention window.
 */
export class SqliteVersionStore implements VersionStore {
  private lastPrune = 0
  private readonly q

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    private readonly retentionMs: number,
  ) {
    db.exec(`CREATE TABLE IF NOT EXISTS message_latest (
      app TEXT NOT NULL, channel TEXT NOT NULL, serial TEXT NOT NULL,
      latest BLOB NOT NULL, upto TEXT NOT NULL, n INTEGER NOT NULL, ts INTEGER NOT NULL,
      PRIMARY KEY (app, channel, serial)) WITHOUT ROWID`)
    db.exec(`CREATE TABLE IF NOT EXISTS message_versions (
      app TEXT NOT NULL, channel TEXT NOT NULL, serial TEXT NOT NULL, version TEXT NOT NULL, body BLOB NOT NULL,
      PRIMARY KEY (app, channel, serial, version)) WITHOUT ROWID`)
    db.exec('CREATE INDEX IF NOT EXISTS message_latest_ts ON message_latest (ts)')
    const versions = 'SELECT body FROM message_versions WHERE app = ? AND channel = ? AND serial = ?'
    this.q = {
      get: db.prepare('SELECT latest, n, ts FROM message_latest WHERE app = ? AND channel = ? AND serial = ?'),
      has: db.prepare('SELECT 1 FROM message_versions WHERE app = ? AND channel = ? AND serial = ? AND version = ?'),
      putLatest: db.prepare(
        'INSERT OR REPLACE INTO message_latest (app, channel, serial, latest, upto, n, ts) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      putVersion: db.prepare(
        'INSERT OR REPLACE INTO message_versions (app, channel, serial, version, body) VALUES (?, ?, ?, ?, ?)',
      ),
      drop: db.prepare('DELETE FROM message_versions WHERE app = ? AND channel = ? AND serial = ?'),
      forwards: db.prepare(`${versions} AND version > ? ORDER BY version ASC LIMIT ?`),
      backwards: db.prepare(`${versions} AND version < ? ORDER BY version DESC LIMIT ?`),
    }
  }

  /** The message's row while it is within retention. */
  private row(app: string, channel: string, serial: string): Row | undefined {
    const r = this.q.get.get(app, channel, serial) as Row | null
    return r && r.ts >= this.clock.now() - this.retentionMs ? r : undefined
  }

  async get(app: string, channel: string, serial: string): Promise<VersionRecord | undefined> {
    const r = this.row(app, channel, serial)
    return r ? { latest: unpack(r.latest) as Message, count: r.n } : undefined
  }

  async latest(app: string, channel: string, serials: string[]): Promise<Map<string, Message>> {
    const out = new Map<string, Message>()
    for (const serial of serials) {
      const r = this.row(app, channel, serial)
      if (r) out.set(serial, unpack(r.latest) as Message)
    }
    return out
  }

  async put(app: string, channel: string, { original, expected, version, latest }: VersionWrite): Promise<boolean> {
    const now = this.clock.now()
    this.prune(now)
    const serial = version.mutation!.serial
    return this.db.transaction(() => {
      const cur = this.row(app, channel, serial)
      if ((cur?.n ?? 0) !== expected) return false
      let n = cur?.n ?? 0
      if (!cur) {
        this.q.drop.run(app, channel, serial) // what an expired record left
        this.q.putVersion.run(app, channel, serial, serial, pack(original))
        n = 1
      }
      if (!this.q.has.get(app, channel, serial, version.serial)) n++
      this.q.putVersion.run(app, channel, serial, version.serial, pack(version))
      this.q.putLatest.run(app, channel, serial, pack(latest), latest.version!.serial, n, now)
      return true
    })()
  }

  async versions(app: string, channel: string, serial: string, q: VersionQuery): Promise<Message[]> {
    if (!this.row(app, channel, serial)) return []
    const rows = (
      q.direction === 'forwards'
        ? this.q.forwards.all(app, channel, serial, q.cursor ?? '', q.limit)
        : this.q.backwards.all(app, channel, serial, q.cursor ?? '\uffff', q.limit)
    ) as { body: Uint8Array }[]
    return rows.map((r) => unpack(r.body) as Message)
  }

  /** Drops the records not written for the retention window (at most once a minute, on writes). */
  private prune(now: number) {
    if (now - this.lastPrune < PRUNE_EVERY_MS) return
    this.lastPrune = now
    const before = now - this.retentionMs
    this.db.transaction(() => {
      this.db
        .prepare(
          `DELETE FROM message_versions WHERE (app, channel, serial) IN
            (SELECT app, channel, serial FROM message_latest WHERE ts < ?)`,
        )
        .run(before)
      this.db.prepare('DELETE FROM message_latest WHERE ts < ?').run(before)
    })()
  }
}
