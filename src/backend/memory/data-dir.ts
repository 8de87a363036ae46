import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs'
import { join } from 'node:path'

/** The files SQLite keeps in the data dir (the database, its write-ahead log and shared memory). */
export const DB_FILES = ['gateway.sqlite', 'gateway.sqlite-wal', 'gateway.sqlite-shm']

/**
 * The data dir holds key secrets and access-token hashes: it is created 0700 and its database
 * files 0600 (SQLite gives the WAL and SHM files the database file's mode, so creating that one
 * 0600 first covers them). An existing dir of ours is tightened the same way. A dir other users
 * can write (group or world write bit) is refused: they could swap the database under us.
 */
export function secureDataDir(dataDir: string): void {
  const st = statSync(dataDir, { throwIfNoEntry: false })
  if (st) {
    if (!st.isDirectory()) throw new Error(`DATA_DIR ${dataDir} is not a directory`)
    if (st.mode & 0o022)
      throw new Error(
        `DATA_DIR ${dataDir} is writable by other users (mode ${(st.mode & 0o777).toString(8)}): ` +
          `it holds key secrets; make it private (chmod 700 ${dataDir}) and start again`,
      )
    if ((st.mode & 0o777) !== 0o700 && st.uid === process.getuid?.()) chmodSync(dataDir, 0o700)
  } else mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  // another process on the same dir (a node stopping as this one starts) may delete its WAL and
  // SHM files at any moment: the last connection to close does, so a file seen a moment ago may
  // be gone now
  for (const f of DB_FILES) {
    const path = join(dataDir, f)
    const file = statSync(path, { throwIfNoEntry: false })
    if (file) {
      if ((file.mode & 0o777) !== 0o600) chmodUnlessGone(path, 0o600)
    } else if (f === DB_FILES[0]) closeSync(openSync(path, 'a', 0o600))
  }
}

/** `chmod`, unless the file is gone by now (deleted by another process: nothing left to tighten). */
function chmodUnlessGone(path: string, mode: number): void {
  try {
    chmodSync(path, mode)
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e
  }
}
