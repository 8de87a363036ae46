import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { RedisKeys } from '../../src/backend/redis/keys'
import type { VersionStore } from '../../src/core/channels/ports'
import type { Message } from '../../src/core/types'
import { TestClock, createTestGateway, type TestGateway } from '../helpers/gateway'
import { rawRedis } from '../helpers/redis-cluster'

// The VersionStore port's contract (core/channels/ports.ts), held against whichever backend
// TEST_BACKEND names: `npm test` runs this file on the embedded store and again on Redis.
let gw: TestGateway
let store: VersionStore
const clock = new TestClock()
const APP = 'contract-app'
beforeAll(async () => {
  gw = await createTestGateway({}, clock)
  store = gw.backend.versions
})
afterAll(async () => {
  await gw.close()
})

let n = 0
const fresh = () => `ch-${Date.now()}-${n++}`
const serialAt = (ms: number, seq = 0) => `${String(ms).padStart(14, '0')}-${String(seq).padStart(6, '0')}`

const original = (serial: string): Message => ({ id: 'o:0', serial, timestamp: 1000, name: 'n', data: 'v0' })
/** A change entry of the message `of` with its own serial, and the latest version it makes. */
function change(of: string, serial: string, data: string | Uint8Array): { version: Message; latest: Message } {
  const description = `to ${String(data)}`
  const mutation = { serial: of, timestamp: 1000, description }
  const version: Message = { id: 'o:0', serial, timestamp: 2000, kind: 'mutation', action: 1, data, mutation }
  const latest: Message = {
    id: 'o:0',
    serial: of,
    timestamp: 1000,
    action: 1,
    name: 'n',
    data,
    version: { serial, timestamp: 2000, description },
  }
  return { version, latest }
}
/** Records change `c` of the message `s` of `ch`, expecting the record to hold `expected` versions (0: none). */
const put = (ch: string, s: string, expected: number, c: { version: Message; latest: Message }) =>
  store.put(APP, ch, { original: original(s), expected, ...c })

describe('VersionStore contract', () => {
  test('a message has no record until its first change; the original is recorded with it', async () => {
    const ch = fresh()
    const s = serialAt(1000)
    expect(await store.get(APP, ch, s)).toBeUndefined()
    expect(await store.versions(APP, ch, s, { limit: 10, direction: 'forwards' })).toEqual([])
    const c = change(s, serialAt(2000), 'v1')
    expect(await put(ch, s, 0, c)).toBe(true)
    expect(await store.get(APP, ch, s)).toEqual({ latest: c.latest, count: 2 })
    expect(await store.versions(APP, ch, s, { limit: 10, direction: 'forwards' })).toEqual([original(s), c.version])
  })

  test('a put is a compare-and-set on the version count: a stale expectation writes nothing', async () => {
    const ch = fresh()
    const s = serialAt(1000)
    const a = change(s, serialAt(2000), 'a')
    const b = change(s, serialAt(3000), 'b')
    expect(await put(ch, s, 0, a)).toBe(true)
    // a second "first" change, and one expecting a count the record no longer has
    expect(await put(ch, s, 0, b)).toBe(false)
    expect(await put(ch, s, 1, b)).toBe(false)
    expect((await store.get(APP, ch, s))?.latest).toEqual(a.latest)
    expect(await put(ch, s, 2, b)).toBe(true)
    expect(await store.get(APP, ch, s)).toEqual({ latest: b.latest, count: 3 })
  })

  test('a write of an older version in between makes an expectation read before it stale (no lost change)', async () => {
    const ch = fresh()
    const s = serialAt(1000)
    const newer = change(s, serialAt(3000), 'newer')
    expect(await put(ch, s, 0, newer)).toBe(true)
    // two writers read the record (2 versions); one records an older change, folded in its place
    const read = (await store.get(APP, ch, s))!
    expect(read).toEqual({ latest: newer.latest, count: 2 })
    const older = change(s, serialAt(2000), 'older')
    const refolded = { ...newer.latest, data: 'older+newer' }
    expect(await put(ch, s, read.count, { version: older.version, latest: refolded })).toBe(true)
    // the other, with a later change folded onto what it read, must not overwrite that
    const latest = change(s, serialAt(4000), 'latest')
    expect(await put(ch, s, read.count, latest)).toBe(false)
    expect(await store.get(APP, ch, s)).toEqual({ latest: refolded, count: 3 })
  })

  test('an older version recorded after a newer one takes its place in the list; re-recording one replaces it', async () => {
    const ch = fresh()
    const s = serialAt(1000)
    const newer = change(s, serialAt(3000), 'newer')
    const older = change(s, serialAt(2000), 'older')
    await put(ch, s, 0, newer)
    const refolded = { ...newer.latest, data: 'refolded' }
    expect(await put(ch, s, 2, { version: older.version, latest: refolded })).toBe(true)
    const again = { ...older.version, name: 'same serial' }
    expect(await put(ch, s, 3, { version: again, latest: refolded })).toBe(true)
    expect(await store.get(APP, ch, s)).toEqual({ latest: refolded, count: 3 })
    const list = await store.versions(APP, ch, s, { limit: 10, direction: 'forwards' })
    expect(list.map((m) => m.serial)).toEqual([s, serialAt(2000), serialAt(3000)])
    expect(list[1]).toEqual(again)
  })

  test('versions page by serial in both directions, after a cursor; binary data reads back', async () => {
    const ch = fresh()
    const s = serialAt(1000)
    for (let i = 1; i <= 5; i++) {
      const c = change(s, serialAt(1000 + i), new Uint8Array([i]))
      expect(await put(ch, s, i === 1 ? 0 : i, c)).toBe(true)
    }
    const serials = (ms: Message[]) => ms.map((m) => m.serial)
    const fwd = await store.versions(APP, ch, s, { limit: 3, direction: 'forwards' })
    expect(serials(fwd)).toEqual([s, serialAt(1001), serialAt(1002)])
    expect([...(fwd[1]!.data as Uint8Array)]).toEqual([1])
    const next = await store.versions(APP, ch, s, { limit: 3, direction: 'forwards', cursor: serialAt(1002) })
    expect(serials(next)).toEqual([serialAt(1003), serialAt(1004), serialAt(1005)])
    const back = await store.versions(APP, ch, s, { limit: 2, direction: 'backwards' })
    expect(serials(back)).toEqual([serialAt(1005), serialAt(1004)])
    const back2 = await store.versions(APP, ch, s, { limit: 10, direction: 'backwards', cursor: serialAt(1002) })
    expect(serials(back2)).toEqual([serialAt(1001), s])
  })

  test('latest answers the changed messages among many, keyed by message serial; channels and apps are apart', async () => {
    const ch = fresh()
    const [s1, s2, s3] = [serialAt(1000), serialAt(1001), serialAt(1002)]
    const c1 = change(s1, serialAt(2000), 'one')
    const c3 = change(s3, serialAt(2001), 'three')
    await put(ch, s1, 0, c1)
    await put(ch, s3, 0, c3)
    const latest = await store.latest(APP, ch, [s1, s2, s3])
    expect([...latest.keys()].sort()).toEqual([s1, s3])
    expect(latest.get(s3)).toEqual(c3.latest)
    expect((await store.latest(APP, fresh(), [s1])).size).toBe(0)
    expect(await store.get('other-app', ch, s1)).toBeUndefined()
  })

  test('a record is forgotten once unwritten for the retention window, and can start afresh', async () => {
    const ch = fresh()
    const s = serialAt(1000)
    const c = change(s, serialAt(2000), 'x')
    await put(ch, s, 0, c)
    if (gw.backend.kind === 'redis') {
      // Redis expires the keys itself (PEXPIRE with the retention): checked on the keys' TTLs
      const redis = await rawRedis(gw.config)
      try {
        const names = new RedisKeys(gw.config.redisPrefix)
        const keys = [names.versions(APP, ch, s), names.versionIndex(APP, ch, s)]
        for (const key of keys) {
          const ttl = Number(await redis.send(['PTTL', key]))
          expect(ttl).toBeGreaterThan(gw.config.persistedHistoryTtlMs - 60_000)
          expect(ttl).toBeLessThanOrEqual(gw.config.persistedHistoryTtlMs)
        }
      } finally {
        await redis.close()
      }
      return
    }
    clock.advance(gw.config.persistedHistoryTtlMs + 1)
    expect(await store.get(APP, ch, s)).toBeUndefined()
    expect(await store.versions(APP, ch, s, { limit: 10, direction: 'forwards' })).toEqual([])
    const d = change(s, serialAt(3000), 'y')
    expect(await put(ch, s, 0, d)).toBe(true)
    expect((await store.versions(APP, ch, s, { limit: 10, direction: 'forwards' })).map((m) => m.serial)).toEqual([
      s,
      serialAt(3000),
    ])
  })
})
