import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { basic, ROOT_KEY } from '../helpers/gateway'
import { listens } from '../helpers/listening'
import { GatewayNode } from '../helpers/node-process'
import { freePort, REDIS_SERVER, TestRedis } from '../helpers/redis'
import { requireSystem } from '../helpers/system'

/** Two gateway processes on one port (REUSE_PORT=true) and one redis-server: one address, two nodes. */
const available = requireSystem(REDIS_SERVER, 'redis-server')
const cluster: { redis?: TestRedis; nodes: GatewayNode[] } = { nodes: [] }

beforeAll(async () => {
  if (!available) return
  const redis = (cluster.redis = await TestRedis.start())
  const port = await freePort()
  const env = { REDIS_URL: redis.url, REDIS_PREFIX: 'shared-port:', REUSE_PORT: 'true' }
  for (let i = 0; i < 2; i++) {
    const node = await GatewayNode.start(env, { port })
    cluster.nodes.push(node)
    // the port answered /ready, maybe from the node started before: wait for this one's own socket
    for (let t = 0; !listens(node.pid!, port); t++) {
      if (t > 200) throw new Error(`node ${i + 1} is not listening on ${port}: ${node.log}`)
      await Bun.sleep(50)
    }
    // and bootstrapped (it listens first): /ready on 20 fresh connections in a row
    for (let ok = 0, t = 0; ok < 20; t++) {
      if (t > 400) throw new Error(`node ${i + 1} not ready: ${node.log}`)
      const r = await fetch(`${node.url}/ready`, { headers: { connection: 'close' } })
      ok = r.status === 200 ? ok + 1 : 0
    }
  }
}, 60_000)
afterAll(async () => {
  for (const n of cluster.nodes) await n.stop()
  await cluster.redis?.stop()
})

const publish = (url: string, data: string) =>
  fetch(`${url}/channels/shared/messages`, {
    method: 'POST',
    // a new connection each time: the kernel spreads connections, not requests
    headers: { authorization: basic(ROOT_KEY), 'content-type': 'application/json', connection: 'close' },
    body: JSON.stringify({ data }),
    signal: AbortSignal.timeout(5000),
  })

describe.skipIf(!available)('REUSE_PORT', () => {
  test('both processes listen on the port; publishes through it land in one history, and it serves on when one node dies', async () => {
    const [a, b] = cluster.nodes as [GatewayNode, GatewayNode]
    expect(b.url).toBe(a.url)
    expect(a.exit).toEqual({ code: null, signal: null })
    expect(b.exit).toEqual({ code: null, signal: null })
    for (let i = 0; i < 40; i++) expect((await publish(a.url, `m${i}`)).status).toBe(201)
    await a.kill()
    for (let i = 40; i < 50; i++) expect((await publish(b.url, `m${i}`)).status).toBe(201)
    const history = (await (
      await fetch(`${b.url}/channels/shared/messages?direction=forwards&limit=100`, {
        headers: { authorization: basic(ROOT_KEY) },
      })
    ).json()) as Array<{ data: string }>
    expect(history.map((m) => m.data)).toEqual(Array.from({ length: 50 }, (_, i) => `m${i}`))
  })
})
