import { Database } from 'bun:sqlite'
import { join } from 'node:path'
import { DB_FILES, secureDataDir } from './data-dir'

/**
 * Opens (and creates) the embedded store in `dataDir`, private to this user (see data-dir.ts);
 * `:memory:` keeps it in memory (tests).
 */
export function openDatabase(dataDir: string): Database {
  let path = ':memory:'
  if (dataDir !== ':memory:') {
    secureDataDir(dataDir)
    path = join(dataDir, DB_FILES[0]!)
  }
  const db = new Database(path, { create: true, strict: true })
  // first: every statement after it, the journal mode's too, waits for a lock another process
  // holds (one closing the same file, which checkpoints it) instead of failing at once
  db.exec('PRAGMA busy_timeout = 5000')
  db.exec('PRAGMA journal_mode = WAL')
  db.exec('PRAGMA synchronous = NORMAL')
  db.exec(`CREATE TABLE IF NOT EXISTS records (
    kind TEXT NOT NULL, id TEXT NOT NULL, parent TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (kind, id)) WITHOUT ROWID`)
  db.exec(`CREATE TABLE IF NOT EXISTS messages (
    app TEXT NOT NULL, channel TEXT NOT NULL, serial TEXT NOT NULL, ts INTEGER NOT NULL, body BLOB NOT NULL,
    id TEXT, PRIMARY KEY (app, channel, serial)) WITHOUT ROWID`)
  db.exec('CREATE INDEX IF NOT EXISTS messages_ts ON messages (ts)')
  // message ids that may be looked up (client-supplied ones, realtime ones a resumed connection
  // resends): how a publish is recognised after a restart emptied memory; other ids stay NULL, unindexed
  const columns = db.query('PRAGMA table_info(messages)').all() as Array<{ name: string }>
  if (!columns.some((c) => c.name === 'id')) db.exec('ALTER TABLE messages ADD COLUMN id TEXT') // a data dir of before
  db.exec('CREATE INDEX IF NOT EXISTS messages_id ON messages (app, channel, id) WHERE id IS NOT NULL')
  // in-memory channel state saved by a graceful shutdown, restored (and cleared) by the next start
  db.exec(`CREATE TABLE IF NOT EXISTS ring_snapshot (
    app TEXT NOT NULL, channel TEXT NOT NULL, floor TEXT NOT NULL, messages BLOB NOT NULL,
    PRIMARY KEY (app, channel)) WITHOUT ROWID`)
  return db
}
