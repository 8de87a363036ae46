/**
 * Presence on Redis is a sequence of single-slot steps (a channel's set; the `{pc}` bookkeeping by
 * connection and node), ordered so a crash between two steps is harmless or repaired. These
 * tests set up what such a crash leaves and check the repair, and that a dead node's members are
 * reported leaving once however many nodes reap at the same time.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connectRedis, type RedisClient } from '../../src/backend/redis/connection'
import { RedisKeys } from '../../src/backend/redis/keys'
import { RedisPresenceStore } from '../../src/backend/redis/presence-store'
import { PresenceAction, type PresenceMessage } from '../../src/core/types'
import { REDIS_SERVER, sharedRedis } from '../helpers/redis'
import { requireSystem } from '../helpers/system'

const available = requireSystem(REDIS_SERVER, 'redis-server')
let client: RedisClient
const stores: RedisPresenceStore[] = []
beforeAll(async () => {
  if (!available) return
  client = await connectRedis({ redisUrl: (await sharedRedis()).url, redisTimeoutMs: 2000 }, () => {})
})
afterAll(async () => {
  for (const s of stores) s.close()
  await client?.quit()
})

const store = (keys: RedisKeys, node: string, leaseMs = 60_000) => {
  const s = new RedisPresenceStore(client, keys, node, { redisTimeoutMs: 2000, presenceLeaseMs: leaseMs }, () => {})
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
    await a.apply('app', 'room', [enter('conn-1', 'alice')])
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
      await dead.apply('app', `room-${i % 3}`, [enter(`c${i}`, `client-${i}`)])
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
    expect(Number(await client.sendCommand(['EXISTS', keys.presenceNodeConnections('node-dead')]))).toBe(0)
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
