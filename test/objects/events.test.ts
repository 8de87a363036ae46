import { afterAll, beforeAll, expect, test } from 'bun:test'
import { APP_ID, createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { messages, openSse, type SseClient } from '../helpers/sse'
import { getJson, NO_LIMITS, objPath, patch, patchOk } from './util'

/** Every change is published on the object's channel; event-stream subscribers see them all, in order. */
let a: TestGateway
let b: TestGateway
let base: string
const streams: SseClient[] = []
beforeAll(async () => {
  a = await createTestGateway(NO_LIMITS)
  base = listen(a)
  // on Redis changes also come from a second node; embedded is single-node
  b =
    a.core.backendKind === 'redis'
      ? await createTestGateway({ ...NO_LIMITS, redisUrl: a.config.redisUrl, redisPrefix: a.config.redisPrefix })
      : a
})
afterAll(async () => {
  for (const s of streams) s.close()
  if (b !== a) await b.close()
  await a.close()
})

async function subscribe(channel: string, auth: string): Promise<SseClient> {
  const before = a.core.hub.count(APP_ID, channel)
  const s = await openSse(`${base}/sse?v=1.2&channels=${encodeURIComponent(channel)}&${auth}`)
  streams.push(s)
  expect(s.status).toBe(200)
  for (let i = 0; i < 200 && a.core.hub.count(APP_ID, channel) <= before; i++) await Bun.sleep(5)
  expect(a.core.hub.count(APP_ID, channel)).toBe(before + 1)
  return s
}

/** The change events received so far: message name plus the parsed event payload. */
const events = (s: SseClient) =>
  messages(s.events).map((e) => {
    const m = JSON.parse(e.data)
    expect(m.encoding).toBe('json')
    return { name: m.name as string, channel: m.channel as string, ...JSON.parse(m.data) }
  })

test('updates and deletes arrive in order with version, timestamp, patch and state', async () => {
  const channel = 'live::$objects:doc'
  const s = await subscribe(channel, `key=${encodeURIComponent(a.key)}`)
  const expected: any[] = []
  for (let i = 1; i <= 5; i++)
    expected.push({ name: 'update', ...(await patchOk(a, 'live', 'doc', { [`k${i}`]: i, last: i })) })
  const del = (await (await a.request(objPath('live', 'doc'), { method: 'DELETE' })).json()) as any
  expected.push({ name: 'delete', version: del.version, timestamp: del.timestamp })
  expected.push({ name: 'update', ...(await patchOk(b, 'live', 'doc', { reborn: true })) })

  await s.until((ev) => messages(ev).length >= expected.length)
  const got = events(s)
  expect(got).toHaveLength(expected.length)
  got.forEach((e, i) => {
    const want = expected[i]
    expect(e).toMatchObject({
      name: want.name,
      channel,
      namespace: 'live',
      objectId: 'doc',
      action: want.name,
      version: want.version,
      timestamp: want.timestamp,
    })
    if (want.name === 'update') expect(e.data).toEqual(want.data)
    else expect(e.data).toBeUndefined()
  })
  expect(got[0].patch).toEqual({ k1: 1, last: 1 })
  expect(got[4].data).toEqual({ k1: 1, k2: 2, k3: 3, k4: 4, k5: 5, last: 5 })
})

test('concurrent changes from many clients (and nodes) arrive once each, in version order', async () => {
  const channel = 'live::$objects:busy'
  await patchOk(a, 'live', 'busy', { n: 0 })
  const s = await subscribe(channel, `key=${encodeURIComponent(a.key)}`)
  const N = 150
  const results = await Promise.all(
    Array.from({ length: N }, (_, i) => patch(i % 2 ? b : a, 'live', 'busy', { data: { [`c${i}`]: i } })),
  )
  expect(results.every((r) => r.status === 200)).toBe(true)
  await s.until((ev) => messages(ev).length >= N)
  await Bun.sleep(100) // nothing more (no duplicates) arrives
  const got = events(s)
  const history = (
    (await getJson(a, objPath('live', 'busy', '/history?direction=forwards&limit=1000'))) as any[]
  ).slice(1)
  expect(history).toHaveLength(N)
  expect(got.map((e) => e.version)).toEqual(history.map((c) => c.version))
  got.forEach((e, i) => expect(e.data).toEqual(history[i].data))
  expect(Object.keys(got[N - 1].data)).toHaveLength(N + 1)
})

test('subscriptions lists the event-stream connections of the object channel', async () => {
  await patchOk(a, 'watch', 'board', { turn: 0 })
  const channel = 'watch::$objects:board'
  expect((await getJson(a, objPath('watch', 'board', '/subscriptions'))).subscriptions).toEqual([])
  const token = (
    (await (
      await a.request(`/keys/${APP_ID}.rootkey/requestToken`, { method: 'POST', json: { clientId: 'alice' } })
    ).json()) as any
  ).token
  await subscribe(channel, `accessToken=${encodeURIComponent(token)}`)
  await subscribe(channel, `key=${encodeURIComponent(a.key)}`)
  const r = await getJson(a, objPath('watch', 'board', '/subscriptions'))
  expect(r.channel).toBe(channel)
  expect(r.subscriptions).toHaveLength(2)
  expect(r.subscriptions.map((x: any) => x.clientId).sort()).toEqual(['alice', null].sort())
  for (const sub of r.subscriptions) expect(typeof sub.connectionId).toBe('string')
  expect(new Set(r.subscriptions.map((x: any) => x.connectionId)).size).toBe(2)
})
