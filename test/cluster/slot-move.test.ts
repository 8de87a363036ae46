import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { spawnSync } from 'node:child_process'
import type { Backend } from '../../src/backend/backend'
import { createRedisBackend } from '../../src/backend/redis'
import { keySlot } from '../../src/backend/redis/cluster'
import { RedisKeys } from '../../src/backend/redis/keys'
import { loadConfig } from '../../src/config'
import { REDIS_SERVER } from '../helpers/redis'
import { REDIS_CLI, TestRedisCluster } from '../helpers/redis-cluster'
import { requireSystem } from '../helpers/system'

/**
 * A channel's slot moved to another master while a node subscribes to it (a resharding): the old
 * master ends the node's SSUBSCRIBE by itself (its own SUNSUBSCRIBE), the node subscribes where
 * the slot is served now, and every message another node publishes before, during and after the
 * move reaches its listener once, in order.
 */
const available = requireSystem(REDIS_SERVER, 'redis-server') && requireSystem(REDIS_CLI, 'redis-cli')
const PREFIX = 'slotmove:'
let cluster: TestRedisCluster
/** The node that subscribes, and another that publishes (so every delivery is a notification). */
let backend: Backend
let publisher: Backend

const cli = (port: number, ...args: string[]): string => {
  const r = spawnSync(REDIS_CLI, ['-h', '127.0.0.1', '-p', String(port), ...args], { encoding: 'utf8' })
  if (r.status !== 0 || /^ERR|^\(error\)/.test(r.stdout))
    throw new Error(`redis-cli ${args.join(' ')}: ${r.stderr || r.stdout}`)
  return r.stdout.trim()
}

/** Moves `slot` with its keys from the master on `from` to the one on `to` (the steps of a resharding). */
function moveSlot(slot: number, from: number, to: number) {
  const fromId = cli(from, 'CLUSTER', 'MYID')
  const toId = cli(to, 'CLUSTER', 'MYID')
  cli(to, 'CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', fromId)
  cli(from, 'CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', toId)
  const keys = cli(from, 'CLUSTER', 'GETKEYSINSLOT', String(slot), '1000').split('\n').filter(Boolean)
  if (keys.length) cli(from, 'MIGRATE', '127.0.0.1', String(to), '', '0', '5000', 'KEYS', ...keys)
  cli(to, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', toId)
  cli(from, 'CLUSTER', 'SETSLOT', String(slot), 'NODE', toId)
}

beforeAll(async () => {
  if (!available) return
  cluster = await TestRedisCluster.start({ masters: 2, replicas: 0 })
  const settings = loadConfig(
    {},
    { redisUrl: cluster.url, redisCluster: true, redisPrefix: PREFIX, redisTimeoutMs: 2000 },
  )
  backend = await createRedisBackend(settings, () => {})
  publisher = await createRedisBackend(settings, () => {})
}, 60_000)
afterAll(async () => {
  await publisher?.close()
  await backend?.close()
  await cluster?.stop()
})

describe.skipIf(!available)('a channel whose slot moves to another master', () => {
  test('the node subscribes where the slot is served now: every message reaches the listener once, in order', async () => {
    const channel = 'moving'
    const keys = new RedisKeys(PREFIX)
    const got: string[] = []
    backend.broker.subscribe('app', channel, (_a, _c, ms) => {
      for (const m of ms) got.push(String(m.data))
    })
    // resolves once the node's SSUBSCRIBE is confirmed
    await backend.broker.position('app', channel)
    const publish = (data: string) =>
      publisher.broker.publish('app', channel, [{ id: `m:${data}`, name: 'm', data }], { persisted: false })
    for (let i = 0; i < 5; i++) await publish(`before-${i}`)

    const stream = keys.stream('app', channel)
    const from = cluster.masterOf(stream)
    const to = cluster.ports.find((p) => p !== from)!
    moveSlot(keySlot(stream), from, to)
    expect(cluster.masterOf(stream)).toBe(to)

    // published while the node finds the new master, then after: none lost, none twice
    for (let i = 0; i < 20; i++) {
      await publish(`after-${i}`)
      await Bun.sleep(25)
    }
    const expected = [
      ...Array.from({ length: 5 }, (_, i) => `before-${i}`),
      ...Array.from({ length: 20 }, (_, i) => `after-${i}`),
    ]
    for (let i = 0; i < 200 && got.length < expected.length; i++) await Bun.sleep(25)
    expect(got).toEqual(expected)
    // the notifications come from the new master now: the old one has no subscriber of the channel
    expect(cli(from, 'PUBSUB', 'SHARDNUMSUB', keys.notify('app', channel)).split('\n')[1]).toBe('0')
    expect(cli(to, 'PUBSUB', 'SHARDNUMSUB', keys.notify('app', channel)).split('\n')[1]).toBe('1')
  }, 30_000)
})
