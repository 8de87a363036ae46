/**
 * Presence on Redis is a sequence of single-slot steps (a channel's set; a connection's
 * bookkeeping in its bucket; the node leases), ordered so a crash between two steps is harmless
 * or repaired. These tests set up what such a crash leaves and check the repair, and that a dead
 * node's members are reported leaving once however many nodes reap at the same time (on the
 * tests' redis-server, or on their Redis Cluster with TEST_BACKEND=redis-cluster: the buckets
 * are then on several masters).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connectCluster } from '../../src/backend/redis/cluster'
import { connectStandalone, type RedisCommander, type RedisConnections } from '../../src/backend/redis/clients'
import { PRESENCE_BUCKETS, RedisKeys } from '../../src/backend/redis/keys'
import { RedisPresenceStore } from '../../src/backend/redis/presence-store'
import { PresenceAction, type PresenceMessage } from '../../src/core/types'
import { REDIS_SERVER, sharedRedis } from '../helpers/redis'
import { sharedRedisCluster } from '../helpers/redis-cluster'
import { requireSystem } from '../helpers/system'

const available = requireSystem(REDIS_SERVER, 'redis-server')
let conns: RedisConnections
let client: RedisCommander
const stores: RedisPresenceStore[] = []
beforeAll(async () => {
  if (!available) return
  conns =
    process.env.TEST_BACKEND === 'redis-cluster'
      ? await connectCluster({ redisUrl: (await sharedRedisCluster()).url, redisTimeoutMs: 2000 }, () => {})
      : await connectStandalone({ redisUrl: (await sharedRedis()).url, redisTimeoutMs: 2000 }, () => {})
  client = conns.cmd
})
afterAll(async () => {
  for (const s of stores) s.close()
  await conns?.quit()
})

/** Presence history retention (the defaults: not what these tests look at). */
const RETENTION = { historyTtlMs: 120_000, persistedHistoryTtlMs: 86_400_000 }

const store = (keys: RedisKeys, node: string, leaseMs = 60_000) => {
  const s = new RedisPresenceStore(
    client,
    keys,
    node,
    { redisTimeoutMs: 2000, presenceLeaseMs: leaseMs, ...RETENTION },
    () => {},
  )
  stores.push(s)
  return s
}
const enter = (connectionId: string, clientId: string): PresenceMessage =>
  ({
    action: PresenceAction.ENTER,
    connectionId,
    clientId,
    id: `${connectionId}:0:0`,
    timestamp: Date.now(),
  }) as PresenceMessage

describe.skipIf(!available)('presence steps on Redis', () => {
  test('a list entry whose member never reached the channel (crash between the steps) is dropped by the take', async () => {
    const keys = new RedisKeys(`psteps-${Date.now()}-a:`)
    const a = store(keys, 'node-a')
    await a.claim('conn-1')
    await a.apply('app', 'room', [enter('conn-1', 'alice')], { persisted: false })
    // what a crash after the list step of an enter leaves: an entry, no member
    await client.sendCommand(['SADD', keys.presenceConnection('conn-1'), 'app\u0000other\u0000bob'])
    const taken = await a.take('conn-1')
    expect(taken.map((o) => [o.channel, o.member.clientId])).toEqual([['room', 'alice']])
    expect(await a.members('app', 'room')).toEqual([])
    expect(Number(await client.sendCommand(['EXISTS', keys.presenceConnection('conn-1')]))).toBe(0)
    expect(Number(await client.sendCommand(['EXISTS', keys.presenceHolder('conn-1')]))).toBe(0)
  })

  test("a dead node's members are reaped once, by one of the nodes reaping at the same time", async () => {
    const keys = new RedisKeys(`psteps-${Date.now()}-b:`)
    const dead = store(keys, 'node-dead', 300)
    for (let i = 0; i < 20; i++) {
      await dead.claim(`c${i}`)
      await dead.apply('app', `room-${i % 3}`, [enter(`c${i}`, `client-${i}`)], { persisted: false })
    }
    dead.close() // stops renewing its lease: killed
    await Bun.sleep(700)
    const others = [store(keys, 'node-1'), store(keys, 'node-2'), store(keys, 'node-3')]
    const reaped = (await Promise.all(others.map((s) => s.reap()))).flat()
    expect(reaped.map((o) => o.member.clientId).sort()).toEqual(
      Array.from({ length: 20 }, (_, i) => `client-${i}`).sort(),
    )
    for (let r = 0; r < 3; r++) expect(await others[0]!.members('app', `room-${r}`)).toEqual([])
    expect(await others[0]!.reap()).toEqual([])
    for (let b = 0; b < PRESENCE_BUCKETS; b++)
      expect(Number(await client.sendCommand(['EXISTS', keys.presenceNodeConnections('node-dead', b)]))).toBe(0)
    expect(await client.sendCommand(['ZSCORE', keys.presenceNodes(), 'node-dead'])).toBeNull()
  })

  test("a node's first claim is answered once its lease is written: killed right after it, its member is reaped", async () => {
    const keys = new RedisKeys(`psteps-${Date.now()}-d:`)
    // the node's lease writes wait until released (a slow first renew)
    let release!: () => void
    const held = new Promise<void>((r) => (release = r))
    const slowLeases: RedisCommander = {
      sendCommand: async (args, options) => {
        if (args.some((a) => String(a) === keys.presenceNodes())) await held
        return client.sendCommand(args, options)
      },
    }
    const dead = new RedisPresenceStore(
      slowLeases,
      keys,
      'node-dead',
      { redisTimeoutMs: 5000, presenceLeaseMs: 300, ...RETENTION },
      () => {},
    )
    stores.push(dead)
    let answered = false
    const claimed = dead.claim('only').then(() => (answered = true))
    await Bun.sleep(100)
    expect(answered).toBe(false)
    release()
    await claimed
    expect(await client.sendCommand(['ZSCORE', keys.presenceNodes(), 'node-dead'])).not.toBeNull()
    await dead.apply('app', 'room', [enter('only', 'alice')], { persisted: false })
    dead.close() // killed right after its first connection
    await Bun.sleep(700)
    const reaped = await store(keys, 'node-live').reap()
    expect(reaped.map((o) => o.member.clientId)).toEqual(['alice'])
    expect(await client.sendCommand(['ZSCORE', keys.presenceNodes(), 'node-dead'])).toBeNull()
  })

  test('a connection is on a live node while the node that issued its key, or the one holding it now, renews its lease', async () => {
    const keys = new RedisKeys(`psteps-${Date.now()}-c:`)
    const dead = store(keys, 'node-dead', 300)
    const live = store(keys, 'node-live')
    await dead.claim('stays')
    await dead.claim('moves')
    expect(await live.onLiveNode('node-dead', 'stays')).toBe(true)
    expect(await live.onLiveNode('never-seen', 'stays')).toBe(true) // held by a node still live
    dead.close() // stops renewing its lease: killed
    for (let i = 0; i < 200 && (await live.onLiveNode('node-dead', 'stays')); i++) await Bun.sleep(25)
    expect(await live.onLiveNode('node-dead', 'stays')).toBe(false)
    await live.claim('moves') // resumed on the live node
    expect(await live.onLiveNode('node-dead', 'moves')).toBe(true)
    expect(await live.onLiveNode('node-live', 'stays')).toBe(true)
    await live.reap() // the dead node is forgotten: its key names no live node
    expect(await live.onLiveNode('node-dead', 'stays')).toBe(false)
    expect(await live.onLiveNode('node-dead', 'moves')).toBe(true)
  })
})
