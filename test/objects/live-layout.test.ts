/**
 * Objects stored by the earlier layout (each object one record holding its map entries) are read
 * as they were and moved to entries of their own: embedded at start, on Redis per object when an
 * operation touches it or a sync reads it (an earlier node may still write them during a rolling
 * upgrade). The official client then sees the same tree and writes on.
 */
import { Database } from 'bun:sqlite'
import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type * as Ably from 'ably'
import { LiveObjects } from 'ably/liveobjects'
import { pack } from '../../src/backend/redis/codec'
import { objectIdOf } from '../../src/core/objects/live-wire'
import { APP_ID, createTestGateway, type TestGateway } from '../helpers/gateway'
import { connectedClient, fresh } from '../helpers/realtime'
import { onRedis, rawRedis } from '../helpers/redis-cluster'
import { MODES } from './live-util'

const M = objectIdOf(
  'map',
  '{"semantics":0,"entries":{"a":{"data":{"string":"x"}},"b":{"data":{"number":1}}}}',
  'n'.repeat(16),
  1,
)
/** Records as the earlier version wrote them: root refers to a map whose create's `a` was set over. */
const legacy = [
  {
    objectId: 'root',
    serial: '00000000000002-000001',
    entries: {
      m: { data: { objectId: M }, timeserial: '00000000000002-000001' },
      gone: { timeserial: '00000000000002-000000', tombstone: true, serialTimestamp: 2 },
    },
  },
  {
    objectId: M,
    serial: '00000000000003-000000',
    created: true,
    createEntries: { a: { data: { string: 'x' } }, b: { data: { number: 1 } } },
    entries: { a: { data: { string: 'y' }, timeserial: '00000000000003-000000' } },
  },
]
const want = { m: { a: 'y', b: 1 } }

const gateways: TestGateway[] = []
afterAll(async () => {
  for (const gw of gateways) await gw.close()
})

async function treeOf(gw: TestGateway, channel: string) {
  const base = gw.listen()
  const c = await connectedClient(Number(new URL(base).port), {
    key: gw.key,
    plugins: { LiveObjects },
  } as Ably.ClientOptions)
  return (c.channels.get(channel, { modes: MODES }) as any).object.get()
}

describe('objects of the earlier layout', () => {
  test.skipIf(onRedis())('embedded: moved at start, read and written as before', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'gw-layout-'))
    const db = new Database(join(dataDir, 'gateway.sqlite'))
    db.exec(`CREATE TABLE live_objects (app TEXT NOT NULL, channel TEXT NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL,
      PRIMARY KEY (app, channel, id)) WITHOUT ROWID`)
    for (const r of legacy)
      db.query('INSERT INTO live_objects VALUES (?, ?, ?, ?)').run(APP_ID, 'old', r.objectId, JSON.stringify(r))
    db.close()
    const gw = await createTestGateway({ dataDir })
    gateways.push(gw)
    const root = await treeOf(gw, 'old')
    expect(root.compact()).toEqual(want)
    await root.get('m').set('c', true)
    expect((await treeOf(gw, 'old')).compact()).toEqual({ m: { ...want.m, c: true } })
  })

  test.skipIf(!onRedis())('Redis: moved per object when touched or synced, read and written as before', async () => {
    const gw = await createTestGateway()
    gateways.push(gw)
    const redis = await rawRedis(gw.config as { redisUrl: string; redisCluster?: boolean })
    const channel = fresh('old')
    const heads = `${gw.config.redisPrefix}lo:{${APP_ID}:${channel}}`
    for (const r of legacy) await redis.send(['HSET', heads, r.objectId, pack(r) as unknown as string])
    // a write to the map moves it first; the sync moves root
    const root = await treeOf(gw, channel)
    expect(root.compact()).toEqual(want)
    await root.get('m').set('c', true)
    const after = { m: { ...want.m, c: true } }
    expect((await treeOf(gw, channel)).compact()).toEqual(after)
    const entries = (await redis.send(['HKEYS', `${gw.config.redisPrefix}loe:{${APP_ID}:${channel}}:${M}`])) as string[]
    expect(entries.sort()).toEqual(['a', 'b', 'c'])
    // an earlier node writes the record again (its way): read as it is, moved at the next write
    const stale = {
      ...legacy[0]!,
      entries: { ...legacy[0]!.entries, z: { data: { number: 9 }, timeserial: '99999999999999-000000' } },
    }
    await redis.send(['HSET', heads, 'root', pack(stale) as unknown as string])
    const late = await treeOf(gw, channel)
    expect(late.compact()).toEqual({ ...after, z: 9 })
    await late.set('y', 1)
    expect((await treeOf(gw, channel)).compact()).toEqual({ ...after, z: 9, y: 1 })
    await redis.close()
  })
})
