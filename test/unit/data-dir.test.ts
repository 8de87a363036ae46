import { afterAll, describe, expect, test } from 'bun:test'
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createMemoryBackend } from '../../src/backend/memory'
import { systemClock } from '../../src/lib/clock'
import { GatewayNode } from '../helpers/node-process'

/** The embedded store's data dir holds key secrets: private to the gateway's user, or refused. */
const root = mkdtempSync(join(tmpdir(), 'gw-datadir-'))
chmodSync(root, 0o755)
afterAll(() => rmSync(root, { recursive: true, force: true }))

const mode = (p: string) => statSync(p).mode & 0o777
const settings = {
  ringSize: 100,
  resumeWindowMs: 0,
  ringMaxBytes: 1 << 20,
  ringTotalMaxBytes: 1 << 30,
  historyTtlMs: 60_000,
  persistedHistoryTtlMs: 60_000,
  idempotencyWindowMs: 60_000,
  channelIdleMs: 60_000,
}

/** Opens the store in `dir`, writes a record (so the WAL and SHM files exist), closes it. */
async function openAndWrite(dir: string) {
  const b = createMemoryBackend({ ...settings, dataDir: dir }, systemClock)
  await b.control.createAccount({ id: 'acc', name: 'a', created: 1 })
  return b
}

describe('data dir permissions', () => {
  test('a new data dir is 0700 and the database, WAL and SHM files 0600 (whatever the umask)', async () => {
    const old = process.umask(0o022)
    try {
      const dir = join(root, 'fresh', 'nested')
      const b = await openAndWrite(dir)
      expect(mode(dir)).toBe(0o700)
      const files = readdirSync(dir).sort()
      expect(files).toEqual(['gateway.sqlite', 'gateway.sqlite-shm', 'gateway.sqlite-wal'])
      for (const f of files) expect(mode(join(dir, f))).toBe(0o600)
      await b.close()
    } finally {
      process.umask(old)
    }
  })

  test('an existing world-readable data dir and its files are made private', async () => {
    const dir = join(root, 'old')
    mkdirSync(dir, { mode: 0o755 })
    chmodSync(dir, 0o755)
    const b = await openAndWrite(dir)
    await b.close()
    chmodSync(join(dir, 'gateway.sqlite'), 0o644)
    chmodSync(dir, 0o755)
    const again = await openAndWrite(dir)
    expect(mode(dir)).toBe(0o700)
    for (const f of readdirSync(dir)) expect(mode(join(dir, f))).toBe(0o600)
    await again.close()
  })

  test('a data dir others can write is refused, and the gateway does not start on it', async () => {
    for (const m of [0o777, 0o775, 0o757]) {
      const dir = join(root, `open-${m.toString(8)}`)
      mkdirSync(dir)
      chmodSync(dir, m)
      expect(() => createMemoryBackend({ ...settings, dataDir: dir }, systemClock)).toThrow(
        'is writable by other users',
      )
    }
    const dir = join(root, 'open-777')
    const started = GatewayNode.start({ DATA_DIR: dir })
    await expect(started).rejects.toThrow('is writable by other users')
    expect(readdirSync(dir)).toEqual([])
  })
})
