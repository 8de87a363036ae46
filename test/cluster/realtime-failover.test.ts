/**
 * Realtime failover between two gateway processes on one redis-server, with the official `ably`
 * client behind a TCP proxy of the test's own (a client has one endpoint; a load balancer picks
 * the node): the subscriber is on node B, the publisher on node A; B is killed (SIGKILL, no
 * goodbye) mid-stream, the proxy sends the reconnect to A, and the client resumes its connection
 * there (same connectionId: connection keys verify on any node) and its channel from its last
 * channelSerial, with nothing lost and nothing twice.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ROOT_KEY } from '../helpers/gateway'
import { GatewayNode } from '../helpers/node-process'
import { closeClients, collect, connectedClient, realtimeClient, reach } from '../helpers/realtime'
import { REDIS_SERVER, TestRedis } from '../helpers/redis'
import { requireSystem } from '../helpers/system'
import { TcpProxy } from '../helpers/tcp-proxy'

const available = requireSystem(REDIS_SERVER, 'redis-server')
let redis: TestRedis
let a: GatewayNode
let b: GatewayNode
let proxy: TcpProxy

beforeAll(async () => {
  if (!available) return
  redis = await TestRedis.start()
  const env = { REDIS_URL: redis.url, REDIS_PREFIX: 'rt-failover:' }
  a = await GatewayNode.start(env)
  b = await GatewayNode.start(env)
  proxy = await TcpProxy.start(b.port)
}, 60_000)
afterAll(async () => {
  closeClients()
  await proxy?.stop()
  for (const n of [a, b]) await n?.stop()
  await redis?.stop()
})

describe.skipIf(!available)('realtime failover on Redis', () => {
  test('kill -9 the subscriber node: the client resumes on the other node with nothing lost', async () => {
    const sub = realtimeClient(proxy.port, { key: ROOT_KEY })
    await reach(sub.connection, 'connected')
    const id = sub.connection.id!
    const ch = sub.channels.get('failover')
    const got = await collect(ch)
    const resumedFlags: boolean[] = []
    ch.on('attached', (c) => resumedFlags.push(c.resumed))
    ch.on('update', (c) => resumedFlags.push(c.resumed))
    const ids: string[] = []
    sub.connection.on('connected', () => ids.push(sub.connection.id!))

    const pub = await connectedClient(a.port, { key: ROOT_KEY })
    const out = pub.channels.get('failover')
    const sent: string[] = []
    for (let i = 0; i < 100; i++) {
      if (i === 50) {
        await b.kill('SIGKILL')
        proxy.target = a.port
      }
      await out.publish('n', `m${i}`)
      sent.push(`m${i}`)
    }
    await got.until(100, 15_000)
    expect(got.messages.map((m) => m.data)).toEqual(sent)
    expect(new Set(got.messages.map((m) => m.id)).size).toBe(100)
    // the same connection, on node A now, and the channel resumed (no discontinuity)
    expect(ids).toEqual([id])
    expect(sub.connection.id).toBe(id)
    expect(resumedFlags).toEqual([true])
    await out.publish('n', 'after')
    await got.until(101)
    expect(got.messages.length).toBe(101)
  }, 30_000)
})
