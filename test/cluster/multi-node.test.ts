import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { basic, ROOT_KEY } from '../helpers/gateway'
import { GatewayNode } from '../helpers/node-process'
import { REDIS_SERVER, TestRedis } from '../helpers/redis'
import { messages, openSse, type SseClient } from '../helpers/sse'
import { requireSystem } from '../helpers/system'

/** Several gateway processes sharing one redis-server of the test's own. */
const available = requireSystem(REDIS_SERVER, 'redis-server')
let redis: TestRedis
const nodes: GatewayNode[] = []
const streams: SseClient[] = []

beforeAll(async () => {
  if (!available) return
  // persisted, as Redis must be in a deployment: the outage test restarts it
  redis = await TestRedis.start({ persist: true })
  for (let i = 0; i < 3; i++)
    nodes.push(await GatewayNode.start({ REDIS_URL: redis.url, REDIS_PREFIX: 'cluster:', REDIS_TIMEOUT_MS: '500' }))
}, 60_000)
afterAll(async () => {
  for (const s of streams) s.close()
  for (const n of nodes) await n.stop()
  await redis?.stop()
})

const auth = { authorization: basic(ROOT_KEY), 'content-type': 'application/json' }
const publish = (node: GatewayNode, channel: string, data: string) =>
  fetch(`${node.url}/channels/${channel}/messages`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ data }),
    signal: AbortSignal.timeout(5000),
  })
const subscribe = async (node: GatewayNode, channel: string, lastEvent?: string) => {
  const s = await openSse(
    `${node.url}/sse?v=1.2&channels=${channel}&key=${encodeURIComponent(ROOT_KEY)}${lastEvent ? `&lastEvent=${encodeURIComponent(lastEvent)}` : ''}`,
  )
  expect(s.status).toBe(200)
  streams.push(s)
  return s
}
const datas = (s: SseClient) => messages(s.events).map((e) => JSON.parse(e.data).data as string)

describe.skipIf(!available)('cluster on Redis', () => {
  test('a message published on one node reaches subscribers on the others, in order', async () => {
    const [a, b, c] = nodes as [GatewayNode, GatewayNode, GatewayNode]
    const onB = await subscribe(b, 'fan')
    const onC = await subscribe(c, 'fan')
    const sent: string[] = []
    for (let i = 0; i < 200; i++) {
      const r = await publish(i % 2 ? a : c, 'fan', `m${i}`)
      expect(r.status).toBe(201)
      sent.push(`m${i}`)
    }
    await onB.until((e) => messages(e).length >= 200)
    await onC.until((e) => messages(e).length >= 200)
    expect(datas(onB)).toEqual(sent)
    expect(datas(onC)).toEqual(sent)
    // history and resume ids are the same on every node
    const histA = (await (await fetch(`${a.url}/channels/fan/messages?limit=5`, { headers: auth })).json()) as any[]
    const histB = (await (await fetch(`${b.url}/channels/fan/messages?limit=5`, { headers: auth })).json()) as any[]
    expect(histA.map((m) => m.serial)).toEqual(histB.map((m) => m.serial))
  })

  test('channel occupancy counts the subscribers on every node, and they leave when their streams end', async () => {
    const [a, b, c] = nodes as [GatewayNode, GatewayNode, GatewayNode]
    const subscribers = async (node: GatewayNode) =>
      ((await (await fetch(`${node.url}/channels/occ`, { headers: auth })).json()) as any).status.occupancy.metrics
        .subscribers as number
    // nodes report their counts asynchronously: poll until the expected total shows
    const settles = async (node: GatewayNode, expected: number) => {
      let seen = -1
      for (let i = 0; i < 250 && seen !== expected; i++) {
        seen = await subscribers(node)
        if (seen !== expected) await Bun.sleep(20)
      }
      return seen
    }
    const onA = await subscribe(a, 'occ')
    const onB1 = await subscribe(b, 'occ')
    const onB2 = await subscribe(b, 'occ')
    expect(await settles(c, 3)).toBe(3) // c has none of its own
    expect(await subscribers(a)).toBe(3)
    expect(
      ((await (await fetch(`${b.url}/channels/other-occ`, { headers: auth })).json()) as any).status.occupancy.metrics
        .subscribers,
    ).toBe(0)
    onB1.close()
    onB2.close()
    expect(await settles(a, 1)).toBe(1)
    onA.close()
    expect(await settles(c, 0)).toBe(0)
  })

  test('a killed node loses nothing acknowledged: its clients resume on a survivor with their last event id', async () => {
    const [a, b, c] = nodes as [GatewayNode, GatewayNode, GatewayNode]
    let sub = await subscribe(c, 'kill')
    const acked: string[] = []
    let stop = false
    let target = b
    const publisher = (async () => {
      for (let i = 0; !stop && i < 3000; i++) {
        try {
          const r = await publish(target, 'kill', `k${i}`)
          if (r.status === 201) acked.push(`k${i}`)
        } catch {
          /* the node died mid-request: not acknowledged */
        }
        if (i === 100) target = c // publish through the node about to die as well
        if (i % 20 === 0) await Bun.sleep(1)
      }
    })()
    await sub.until((e) => messages(e).length >= 150)
    await c.kill('SIGKILL')
    target = a
    await sub.ended
    const received = datas(sub)
    const lastId = messages(sub.events).at(-1)!.id!
    sub = await subscribe(a, 'kill', lastId)
    await Bun.sleep(300)
    stop = true
    await publisher
    await sub.until(
      (e) => received.length + messages(e).length >= acked.length && datas(sub).includes(acked.at(-1)!),
      20_000,
    )
    const all = [...received, ...datas(sub)]
    expect(new Set(all).size).toBe(all.length) // no duplicate
    const got = new Set(all)
    expect(acked.filter((m) => !got.has(m))).toEqual([]) // nothing acknowledged is lost
    const order = all.map((m) => Number(m.slice(1)))
    expect(order).toEqual([...order].sort((x, y) => x - y)) // in publish order
  }, 60_000)

  test('a Redis outage fails publishes fast with 503 in the error shape; the cluster recovers by itself', async () => {
    const [a, b] = nodes as [GatewayNode, GatewayNode]
    const sub = await subscribe(b, 'outage')
    expect((await publish(a, 'outage', 'before')).status).toBe(201)
    await sub.until((e) => messages(e).length === 1)

    await redis.kill()
    const t0 = Date.now()
    const r = await publish(a, 'outage', 'during')
    expect(Date.now() - t0).toBeLessThan(5000) // it answers, it does not hang
    expect(r.status).toBe(503)
    expect(r.headers.get('content-type')).toBe('application/json')
    expect(((await r.json()) as any).error).toMatchObject({ code: 50003, statusCode: 503 })
    expect((await fetch(`${a.url}/ready`)).status).toBe(503)

    await redis.restart()
    let ok = false
    for (let i = 0; i < 100 && !ok; i++) {
      ok = (await fetch(`${a.url}/ready`)).status === 200 && (await fetch(`${b.url}/ready`)).status === 200
      if (!ok) await Bun.sleep(100)
    }
    expect(ok).toBe(true)
    // Redis came back with its data (append-only file): publishing resumes at once, in order
    const after: string[] = []
    for (let i = 0; i < 20; i++) {
      const res = await publish(i % 2 ? a : b, 'outage', `after${i}`)
      expect(res.status).toBe(201)
      after.push(`after${i}`)
    }
    await sub.until((e) => messages(e).length >= 21, 20_000)
    expect(datas(sub)).toEqual(['before', ...after])
  }, 60_000)
})
