/**
 * The stats store's contract on both backends (through gw.backend): pages are made of live
 * records, in order; on Redis an interval whose counters expired never takes a live record's
 * place in a page, and its index entry is removed.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { RedisKeys } from '../../src/backend/redis/keys'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { rawRedis } from '../helpers/redis-cluster'

let gw: TestGateway
beforeAll(async () => {
  gw = await createTestGateway()
})
afterAll(async () => {
  await gw.close()
})

const minute = (i: number) => Date.UTC(2025, 0, 1, 10, i)
const counts = (rows: Array<{ entries: Record<string, number> }>) => rows.map((r) => r.entries['x.count'])

test('pages of live records, forwards and backwards; on Redis expired intervals are skipped and unindexed', async () => {
  const scope = `scope-${Math.random().toString(36).slice(2)}`
  for (let i = 0; i < 6; i++) gw.backend.stats.add([scope], minute(i), { 'x.count': i + 1 })
  const query = (limit: number, direction: 'forwards' | 'backwards') =>
    gw.backend.stats.query(scope, 'minute', 0, minute(59), limit, direction)
  expect(counts(await query(2, 'forwards'))).toEqual([1, 2])
  expect(counts(await query(2, 'backwards'))).toEqual([6, 5])
  if (gw.backend.kind !== 'redis') return

  // the counters of the first four minutes expire (as RETENTION_S after their last write would)
  const redis = await rawRedis(gw.config)
  try {
    const keys = new RedisKeys(gw.config.redisPrefix)
    for (let i = 0; i < 4; i++) await redis.send(['DEL', keys.stats(scope, 'minute', minute(i))])
    expect(counts(await query(2, 'forwards'))).toEqual([5, 6])
    expect(counts(await query(10, 'backwards'))).toEqual([6, 5])
    // the index entries are removed in the background: wait for it (bounded)
    let indexed = -1
    for (let i = 0; i < 100 && indexed !== 2; i++) {
      indexed = Number(await redis.send(['ZCARD', keys.statsIndex(scope, 'minute')]))
      if (indexed !== 2) await Bun.sleep(10)
    }
    expect(indexed).toBe(2)
  } finally {
    await redis.close()
  }
})
