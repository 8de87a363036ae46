import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Ably from 'ably'
import { basic, ROOT_KEY } from '../helpers/gateway'
import { GatewayNode } from '../helpers/node-process'
import { REDIS_SERVER, TestRedis } from '../helpers/redis'
import { requireSystem } from '../helpers/system'

/** Presence across gateway processes sharing one redis-server: one member set, and leases for dead nodes. */
const available = requireSystem(REDIS_SERVER, 'redis-server')
const LEASE_MS = 2000
let redis: TestRedis
let a: GatewayNode
let b: GatewayNode
const clients: Ably.Realtime[] = []

beforeAll(async () => {
  if (!available) return
  redis = await TestRedis.start({ persist: true })
  const env = { REDIS_URL: redis.url, REDIS_PREFIX: 'presence-cluster:', PRESENCE_LEASE_MS: String(LEASE_MS) }
  a = await GatewayNode.start(env)
  b = await GatewayNode.start(env)
}, 60_000)
afterAll(async () => {
  for (const c of clients) c.close()
  await a?.stop()
  await b?.stop()
  await redis?.stop()
})

function client(node: GatewayNode, clientId?: string): Ably.Realtime {
  const c = new Ably.Realtime({
    key: ROOT_KEY,
    ...(clientId ? { clientId } : {}),
    endpoint: '127.0.0.1',
    port: node.port,
    tls: false,
    logLevel: 0,
    disconnectedRetryTimeout: 60_000, // a client of a killed node stays away (no resume elsewhere)
  } as Ably.ClientOptions)
  clients.push(c)
  return c
}
const members = async (node: GatewayNode, channel: string) =>
  (await (
    await fetch(`${node.url}/channels/${channel}/presence?limit=1000`, { headers: { authorization: basic(ROOT_KEY) } })
  ).json()) as Array<{ clientId: string }>

describe.skipIf(!available)('presence on a Redis cluster', () => {
  test('members entered on node A are seen on node B; killing A makes them leave on B within the lease', async () => {
    const onA = client(a)
    const p = onA.channels.get('room').presence
    await Promise.all(['ann', 'ben', 'cat'].map((id) => p.enterClient(id, `from ${id}`)))
    const watcher = client(b, 'watcher')
    const wp = watcher.channels.get('room').presence
    const seen = await wp.get()
    expect(seen.map((m) => m.clientId).sort()).toEqual(['ann', 'ben', 'cat'])
    expect(seen.find((m) => m.clientId === 'ben')!.data).toBe('from ben')
    expect((await members(b, 'room')).length).toBe(3)

    const left: string[] = []
    wp.subscribe('leave', (m) => left.push(m.clientId!))
    const killed = Date.now()
    await a.kill('SIGKILL')
    for (let i = 0; i < 400 && left.length < 3; i++) await Bun.sleep(25)
    expect(left.sort()).toEqual(['ann', 'ben', 'cat'])
    // the lease, plus at most half of it until a node's reaper looks, plus delivery
    expect(Date.now() - killed).toBeLessThan(LEASE_MS * 1.5 + 2000)
    expect(await members(b, 'room')).toEqual([])
    await a.restart()
  }, 30_000)
})
