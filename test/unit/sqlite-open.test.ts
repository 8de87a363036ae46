import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DB_FILES } from '../../src/backend/memory/data-dir'
import { openDatabase } from '../../src/backend/memory/sqlite'

/**
 * Several processes open one DATA_DIR (a restart overlapping the old process's exit, the benches'
 * account bootstrap). One of them may hold the file's lock while another opens it: a process
 * closing the file checkpoints it under an exclusive lock. The opening one waits for the lock
 * (busy_timeout), from its first statement on, instead of failing at once with "database is
 * locked" (as the journal mode's statement did when it ran before the timeout was set).
 */
const dir = mkdtempSync(join(tmpdir(), 'gw-sqlite-open-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const HOLD_MS = 300

/** A process that takes the file's exclusive lock, says so, and lets it go after HOLD_MS. */
const holder = `
import { Database } from 'bun:sqlite'
const db = new Database(${JSON.stringify(join(dir, DB_FILES[0]!))})
db.exec('PRAGMA locking_mode = EXCLUSIVE')
db.exec('BEGIN EXCLUSIVE')
db.exec("INSERT INTO records VALUES ('held', 'x', '', '1')")
db.exec('COMMIT')
console.log('locked')
setTimeout(() => db.close(), ${HOLD_MS})
`

test('opening a store another process holds locked waits for the lock instead of failing', async () => {
  openDatabase(dir).close()
  const script = join(dir, 'holder.ts')
  await Bun.write(script, holder)
  const proc = Bun.spawn([process.execPath, script], { stdout: 'pipe', stderr: 'inherit' })
  const reader = proc.stdout.getReader()
  let said = ''
  while (!said.includes('locked')) {
    const { value, done } = await reader.read()
    if (done) break
    said += new TextDecoder().decode(value)
  }
  expect(said).toContain('locked')
  const db = openDatabase(dir)
  expect(db.query("SELECT id FROM records WHERE kind = 'held'").get()).toEqual({ id: 'x' })
  db.close()
  expect(await proc.exited).toBe(0)
})
