/**
 * Publish on behalf of a connection whose node died (Redis and Redis Cluster: TEST_BACKEND):
 * two gateway processes share the store, with a short node lease. Connections open on node A
 * (one behind a TCP proxy of the test's own, as behind a load balancer); REST publishes on their
 * behalf go to node B. A is killed (SIGKILL: it records nothing about its connections): once its
 * lease has run out, B refuses their keys as it does the key of a closed connection (400 /
 * 40006), also after A's connections were reaped; the proxied client then resumes on B (same
 * connection id) and can be published on behalf of again, with the key B gave it and with the
 * one A had given it. On the embedded store there is one node: nothing of this applies.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import * as Ably from 'ably'
import { RedisKeys } from '../../src/backend/redis/keys'
import { ROOT_KEY } from '../helpers/gateway'
import { GatewayNode } from '../helpers/node-process'
import { closeClients, connectedClient, fresh, reach } from '../helpers/realtime'
import { backendEnvFor, onRedis, rawRedis } from '../helpers/redis-cluster'
import { TcpProxy } from '../helpers/tcp-proxy'

const PREFIX = `on-behalf-dead-${Date.now()}:`
let a: GatewayNode
let b: GatewayNode
let proxy: TcpProxy
let env: Record<string, string>

beforeAll(async () => {
  if (!onRedis()) return
  env = { ...(await backendEnvFor(PREFIX)), PRESENCE_LEASE_MS: '1000' }
  a = await GatewayNode.start(env)
  b = await GatewayNode.start(env)
  proxy = await TcpProxy.start(a.port)
}, 60_000)
afterAll(async () => {
  closeClients()
  await proxy?.stop()
  for (const n of [a, b]) await n?.stop()
})

/** Polls `check` until it holds; fails after `ms` (a bound only a stall reaches, not a timing). */
async function until(what: string, check: () => Promise<boolean>, ms = 30_000) {
  for (const end = Date.now() + ms; !(await check()); await Bun.sleep(100))
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`)
}

describe.skipIf(!onRedis())('publish on behalf of a connection of a node that died', () => {
  test('refused once the node lease lapses (also after the reap); allowed again once the connection resumed on a live node', async () => {
    const rest = new Ably.Rest({ key: ROOT_KEY, endpoint: '127.0.0.1', port: b.port, tls: false, logLevel: 0 })
    const channel = rest.channels.get(fresh('on-behalf-dead'))
    /** The error of a publish on behalf with `key` through node B (undefined when it was published). */
    const publishWith = (key: string, data: string) =>
      channel.publish({ name: 'n', data, connectionKey: key }).then(
        () => undefined,
        (e) => e as Ably.ErrorInfo,
      )
    const expectRefused = (err: Ably.ErrorInfo | undefined) => {
      expect(err?.code).toBe(40006)
      expect(err?.statusCode).toBe(400)
      expect(err?.message).toContain('the connection is closed or expired')
    }

    // one client behind the proxy (it resumes on B later), one straight on A (it never comes back)
    const moving = await connectedClient(proxy.port, { key: ROOT_KEY })
    const stranded = await connectedClient(a.port, { key: ROOT_KEY, disconnectedRetryTimeout: 600_000 })
    const movingId = moving.connection.id!
    const keyFromA = moving.connection.key!
    const strandedKey = stranded.connection.key!

    // both live on A: published on their behalf through B, with their connection ids
    expect(await publishWith(keyFromA, 'before moving')).toBeUndefined()
    expect(await publishWith(strandedKey, 'before stranded')).toBeUndefined()
    const before = (await channel.history({ direction: 'forwards' })).items
    expect(before.map((m) => [m.data, m.connectionId])).toEqual([
      ['before moving', movingId],
      ['before stranded', stranded.connection.id],
    ])

    await a.kill('SIGKILL')
    // the key of A is refused once A's lease has lapsed (until then it is published: each try may be)
    await until(
      'the key of the killed node is refused',
      async () => (await publishWith(keyFromA, 'probe')) !== undefined,
    )
    expectRefused(await publishWith(keyFromA, 'after the kill'))
    expectRefused(await publishWith(strandedKey, 'after the kill'))

    // and still once B has reaped A's connections (A is then gone from the leases)
    const aNode = keyFromA.split('!')[1]!.split('.')[1]!
    const redis = await rawRedis({ redisUrl: env.REDIS_URL!, redisCluster: env.REDIS_CLUSTER === 'true' })
    try {
      const nodes = new RedisKeys(PREFIX).presenceNodes()
      await until('the killed node is reaped', async () => (await redis.send(['ZSCORE', nodes, aNode])) === null)
    } finally {
      await redis.close()
    }
    expectRefused(await publishWith(keyFromA, 'after the reap'))
    expectRefused(await publishWith(strandedKey, 'after the reap'))

    // the proxied client resumes on B: the same connection, held by a live node again
    proxy.target = b.port
    await until('the client resumed on B', async () => moving.connection.state === 'connected', 30_000)
    await reach(moving.connection, 'connected')
    expect(moving.connection.id).toBe(movingId)
    const keyFromB = moving.connection.key!
    expect(keyFromB).not.toBe(keyFromA)
    expect(await publishWith(keyFromB, 'resumed, new key')).toBeUndefined()
    expect(await publishWith(keyFromA, 'resumed, old key')).toBeUndefined()
    expectRefused(await publishWith(strandedKey, 'still stranded'))
    const after = (await channel.history({ direction: 'backwards', limit: 2 })).items.reverse()
    expect(after.map((m) => [m.data, m.connectionId])).toEqual([
      ['resumed, new key', movingId],
      ['resumed, old key', movingId],
    ])
  }, 90_000)
})
