/**
 * The plugin's LiveObjects across processes: two gateway nodes on one redis-server, clients of the
 * official `ably/liveobjects` plugin on each writing the same keys and counters concurrently,
 * converging on one state that a client attaching later syncs; and `kill -9` of a node (on Redis,
 * and an embedded node with its data dir) loses no acknowledged operation.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import * as Ably from 'ably'
import { LiveCounter, LiveObjects } from 'ably/liveobjects'
import { ROOT_KEY } from '../helpers/gateway'
import { GatewayNode } from '../helpers/node-process'
import { REDIS_SERVER, TestRedis } from '../helpers/redis'
import { requireSystem } from '../helpers/system'
import { eventually, MODES } from '../objects/live-util'

const available = requireSystem(REDIS_SERVER, 'redis-server')
let redis: TestRedis
const nodes: GatewayNode[] = []
const clients: Ably.Realtime[] = []

beforeAll(async () => {
  if (!available) return
  redis = await TestRedis.start({ persist: true })
  for (let i = 0; i < 2; i++) nodes.push(await GatewayNode.start({ REDIS_URL: redis.url, REDIS_PREFIX: 'lo:' }))
}, 60_000)
afterAll(async () => {
  for (const c of clients) c.close()
  for (const n of nodes) await n.stop()
  await redis?.stop()
})

function client(node: GatewayNode, binary: boolean): Ably.Realtime {
  const c = new Ably.Realtime({
    key: ROOT_KEY,
    endpoint: '127.0.0.1',
    port: node.port,
    tls: false,
    useBinaryProtocol: binary,
    logLevel: 0,
    disconnectedRetryTimeout: 100,
    plugins: { LiveObjects },
  } as Ably.ClientOptions)
  clients.push(c)
  return c
}
const rootOf = async (c: Ably.Realtime, name: string) => (c.channels.get(name, { modes: MODES }) as any).object.get()

describe.skipIf(!available)('LiveObjects on two nodes of one Redis', () => {
  test('concurrent writes of the same keys and counters converge on both nodes and in a later sync', async () => {
    const name = `lo-converge-${Date.now()}`
    const [n1, n2] = nodes as [GatewayNode, GatewayNode]
    const a = await rootOf(client(n1, true), name)
    const b = await rootOf(client(n2, false), name)
    await a.set('hits', LiveCounter.create(0))
    await eventually(() => expect(b.get('hits').value()).toBe(0))
    const writes: Promise<unknown>[] = []
    for (let i = 0; i < 25; i++) {
      writes.push(a.set('last', `a${i}`), a.get('hits').increment(1), a.set(`a${i}`, i))
      writes.push(b.set('last', `b${i}`), b.get('hits').increment(2), b.set(`b${i}`, i))
    }
    await Promise.all(writes)
    await eventually(() => expect(a.compact()).toEqual(b.compact()))
    expect(a.get('hits').value()).toBe(75)
    expect(Object.keys(a.compact()).length).toBe(52)
    const late = await rootOf(client(n1, false), name)
    expect(late.compact()).toEqual(a.compact())
  })

  test('kill -9 of a node: every acknowledged operation is there after, on the other node and on the restarted one', async () => {
    const name = `lo-kill-${Date.now()}`
    const [n1, n2] = nodes as [GatewayNode, GatewayNode]
    const w = await rootOf(client(n1, true), name)
    await w.set('n', LiveCounter.create(1))
    let acked = 0
    for (let i = 0; i < 30; i++) {
      await w.get('n').increment(1)
      acked++
    }
    await n1.kill('SIGKILL')
    const other = await rootOf(client(n2, true), name)
    expect(other.get('n').value()).toBe(1 + acked)
    await n1.restart()
    const again = await rootOf(client(n1, false), name)
    expect(again.get('n').value()).toBe(1 + acked)
  })
})

describe('LiveObjects on an embedded node', () => {
  let node: GatewayNode
  beforeAll(async () => {
    node = await GatewayNode.start({})
  }, 60_000)
  afterAll(() => node.stop())

  test('kill -9: every acknowledged operation is in the sync after the restart', async () => {
    const name = `lo-embedded-kill`
    const w = await rootOf(client(node, true), name)
    await w.set('n', LiveCounter.create(0))
    for (let i = 0; i < 30; i++) await w.get('n').increment(1)
    await w.set('done', true)
    await node.kill('SIGKILL')
    await node.restart()
    const r = await rootOf(client(node, false), name)
    expect(r.compact()).toEqual({ n: 30, done: true })
  })
})
