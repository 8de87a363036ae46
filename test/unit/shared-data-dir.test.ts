import { Database } from 'bun:sqlite'
import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SqliteControlStore } from '../../src/backend/memory/control-store'
import { DB_FILES, secureDataDir } from '../../src/backend/memory/data-dir'
import { openDatabase } from '../../src/backend/memory/sqlite'

/**
 * Several processes open one DATA_DIR (a restart overlapping the old process's exit, the benches'
 * account bootstrap, which starts nodes on one dir several at a time). What one of them does to
 * the dir's files must not stop another from starting.
 */
const dir = mkdtempSync(join(tmpdir(), 'gw-shared-data-dir-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const HOLD_MS = 300
/** How long the churning process deletes and creates the WAL file. */
const CHURN_MS = 1000

/** Runs `code` in a child Bun process; resolves when the child prints `ready`. */
async function child(name: string, code: string) {
  const script = join(dir, `${name}.ts`)
  await Bun.write(script, code)
  const proc = Bun.spawn([process.execPath, script], { stdout: 'pipe', stderr: 'inherit' })
  const reader = proc.stdout.getReader()
  let said = ''
  while (!said.includes('ready')) {
    const { value, done } = await reader.read()
    if (done) break
    said += new TextDecoder().decode(value)
  }
  expect(said).toContain('ready')
  return proc
}

/** A process that takes the file's exclusive lock, says so, and lets it go after HOLD_MS. */
const holder = `
import { Database } from 'bun:sqlite'
const db = new Database(${JSON.stringify(join(dir, DB_FILES[0]!))})
db.exec('PRAGMA locking_mode = EXCLUSIVE')
db.exec('BEGIN EXCLUSIVE')
db.exec("INSERT INTO records VALUES ('held', 'x', '', '1')")
db.exec('COMMIT')
console.log('ready')
setTimeout(() => db.close(), ${HOLD_MS})
`

// A process closing the file checkpoints it under an exclusive lock. The opening one waits for the
// lock (busy_timeout), from its first statement on, instead of failing at once with "database is
// locked" (as the journal mode's statement did when it ran before the timeout was set).
test('opening a store another process holds locked waits for the lock instead of failing', async () => {
  openDatabase(dir).close()
  const proc = await child('holder', holder)
  const db = openDatabase(dir)
  expect(db.query("SELECT id FROM records WHERE kind = 'held'").get()).toEqual({ id: 'x' })
  db.close()
  expect(await proc.exited).toBe(0)
})

// The last connection to close deletes the WAL and SHM files: one seen a moment ago may be gone
// when it is looked at or tightened (this failed thousands of times in a second before).
test('the WAL file deleted by another process while this one checks the files is no error', async () => {
  const wal = join(dir, DB_FILES[1]!)
  const churn = `
import { closeSync, openSync, unlinkSync } from 'node:fs'
console.log('ready')
const end = Date.now() + ${CHURN_MS}
while (Date.now() < end) {
  closeSync(openSync(${JSON.stringify(wal)}, 'a', 0o644))
  unlinkSync(${JSON.stringify(wal)})
}
`
  const proc = await child('churn', churn)
  const failures = new Set<string>()
  let checks = 0
  const end = Date.now() + CHURN_MS / 2
  while (Date.now() < end) {
    try {
      secureDataDir(dir)
    } catch (e) {
      failures.add((e as Error).message)
    }
    checks++
  }
  expect(await proc.exited).toBe(0)
  expect([...failures]).toEqual([])
  expect(checks).toBeGreaterThan(0)
})

// The node's secret (and the bootstrap) is read, then written when missing, in one transaction.
// Begun deferred, it would hold only a read snapshot: a write another node committed in between
// makes its own write fail at once (SQLITE_BUSY_SNAPSHOT, which no busy timeout waits out).
// Immediate, it holds the write lock from its start: the other node's write waits instead. Here
// the other node writes from inside the transaction (through the store's upsert), so it cannot
// wait: it is refused at once, and the store's own write goes through.
test("the secret's read-then-write transaction holds the write lock from its start", async () => {
  const own = mkdtempSync(join(tmpdir(), 'gw-shared-secret-'))
  try {
    const db = openDatabase(own)
    const store = new SqliteControlStore(db)
    const other = new Database(join(own, DB_FILES[0]!))
    other.exec('PRAGMA busy_timeout = 0')
    const internals = store as unknown as { upsert: { run(...a: unknown[]): unknown } }
    const upsert = internals.upsert
    let otherWrite = 'not tried'
    internals.upsert = {
      run: (...a: unknown[]) => {
        try {
          other.exec("INSERT INTO records VALUES ('meta', 'other', '', '1')")
          otherWrite = 'written'
        } catch (e) {
          otherWrite = (e as Error).message
        }
        return upsert.run(...a)
      },
    }
    const secret = await store.secret()
    expect(typeof secret).toBe('string')
    expect(otherWrite).toBe('database is locked')
    other.close()
    db.close()
  } finally {
    rmSync(own, { recursive: true, force: true })
  }
})
