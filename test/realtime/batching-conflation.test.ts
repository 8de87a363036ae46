/**
 * Server-side batching and conflation from the namespace rules (the Control API's
 * `batchingEnabled`/`batchingInterval` and `conflationEnabled`/`conflationInterval`/
 * `conflationKey`), with the official `ably` client over WebSocket (msgpack, JSON) and comet, raw
 * frames, and event streams: what is published in an interval arrives after it, together, in
 * order; conflation delivers the latest message per key per interval and an update superseding
 * the earlier changes of its message; history holds every message. A conflation key outside the
 * hosted syntax is refused (40000). On Redis, the subscriber is on a second node as well.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { ACCESS_TOKEN, APP_ID } from '../helpers/gateway'
import { messagesPath, publishOne } from '../helpers/mutable'
import { collector, fresh, reach, realtimeClient, realtimeGateway, secondNode } from '../helpers/realtime'
import { rawConnected } from '../helpers/realtime-raw'
import { messages, openSse, type SseClient } from '../helpers/sse'

const rt = realtimeGateway()
const other = secondNode(rt)
const INTERVAL = 300
beforeAll(async () => {
  const put = (id: string, rule: Record<string, unknown>) =>
    rt.gw.backend.control.putNamespace({
      appId: APP_ID,
      id,
      persisted: false,
      pushEnabled: false,
      mutableMessages: false,
      ...rule,
    })
  await put('batched', { batchingEnabled: true, batchingInterval: INTERVAL })
  await put('conflated', {
    conflationEnabled: true,
    conflationInterval: INTERVAL,
    conflationKey: "#{message.extras.headers['market']}",
  })
  await put('conflated-mut', { conflationEnabled: true, conflationInterval: INTERVAL, mutableMessages: true })
})
const streams: SseClient[] = []
afterAll(() => {
  for (const s of streams) s.close()
})

const TRANSPORTS = [
  ['WebSocket msgpack', { binary: true, transports: undefined }],
  ['WebSocket JSON', { binary: false, transports: undefined }],
  ['comet', { binary: false, transports: ['comet'] }],
] as const

/** 20 messages, 5 for each of 4 markets, in one publish (one batch of the broker: one interval whatever the machine's speed). */
const TICKS = Array.from({ length: 20 }, (_, i) => ({
  name: 'tick',
  data: `${'ABCD'[i % 4]}${Math.floor(i / 4)}`,
  extras: { headers: { market: 'ABCD'[i % 4]! } },
}))
const LATEST = ['A4', 'B4', 'C4', 'D4']

describe.each(TRANSPORTS)('namespace rules over %s', (_name, t) => {
  /** A subscriber on `port` recording when each message arrived. */
  async function subscriber(port: number, name: string) {
    const c = realtimeClient(
      port,
      { key: rt.gw.key, ...(t.transports ? { transports: [...t.transports] } : {}) },
      t.binary,
    )
    await reach(c.connection, 'connected')
    const got = collector()
    const at: number[] = []
    await c.channels.get(name).subscribe((m) => {
      at.push(performance.now())
      got.push(m)
    })
    return { got, at }
  }
  const nodes = () => (other.port ? [rt.port, other.port] : [rt.port])

  test('batching: what is published in an interval arrives after it, in order; history holds every message', async () => {
    for (const port of nodes()) {
      const name = fresh('batched:b')
      const { got, at } = await subscriber(port, name)
      const ch = rt.rest({ binary: t.binary }).channels.get(name)
      const started = performance.now()
      for (let i = 0; i < 5; i++) await ch.publish('m', String(i))
      await got.until(5)
      expect(got.messages.map((m) => m.data)).toEqual(['0', '1', '2', '3', '4'])
      // held for the interval (a busy machine only makes it later)
      expect(at[0]! - started).toBeGreaterThanOrEqual(INTERVAL - 50)
      expect((await ch.history()).items.length).toBe(5)
    }
  })

  test('conflation: the latest message per key of an interval, in order; history holds every message', async () => {
    for (const port of nodes()) {
      const name = fresh('conflated:c')
      const { got, at } = await subscriber(port, name)
      const ch = rt.rest({ binary: t.binary }).channels.get(name)
      const started = performance.now()
      await ch.publish(TICKS)
      await got.until(4)
      expect(at[0]! - started).toBeGreaterThanOrEqual(INTERVAL - 50)
      // the next interval's message: nothing else of the first came
      await ch.publish({ name: 'tick', data: 'A5', extras: { headers: { market: 'A' } } })
      await got.until(5)
      expect(got.messages.map((m) => m.data)).toEqual([...LATEST, 'A5'])
      expect((await ch.history({ limit: 100 })).items.length).toBe(21)
    }
  })

  test('conflation of changes: an update supersedes the earlier changes of its message in the interval', async () => {
    const name = fresh('conflated-mut:u')
    const serial = await publishOne(rt.gw, name, { name: 'doc', data: 'v0' })
    const { got } = await subscriber(rt.port, name)
    const rest = rt.rest({ binary: t.binary }).channels.get(name)
    const started = performance.now()
    await Promise.all([
      rest.updateMessage({ serial, data: 'v1' } as Ably.Message),
      rest.updateMessage({ serial, data: 'v2' } as Ably.Message),
    ])
    await rest.updateMessage({ serial, data: 'v3' } as Ably.Message)
    const elapsed = performance.now() - started
    const last = async () => (await rest.getMessage(serial)).data
    expect(await last()).toBe('v3')
    await rest.publish('after', 'x')
    await got.until(1)
    await new Promise<void>((resolve) => {
      const check = () => (got.messages.some((m) => m.name === 'after') ? resolve() : setTimeout(check, 20))
      check()
    })
    const updates = got.messages.filter((m) => m.action === 'message.update')
    expect(updates.at(-1)!.data).toBe('v3')
    // three updates, at most one per interval they were made in
    expect(updates.length).toBeLessThanOrEqual(1 + Math.ceil(elapsed / INTERVAL))
  })
})

test('batching on the wire: messages published one by one within an interval share one MESSAGE frame', async () => {
  const name = fresh('batched:raw')
  const { raw } = await rawConnected(rt.base, { key: rt.gw.key, heartbeats: 'false' })
  raw.send({ action: 10, channel: name })
  await raw.next((f) => f.action === 11)
  const ch = rt.rest().channels.get(name)
  const started = performance.now()
  for (let i = 0; i < 5; i++) await ch.publish('m', String(i))
  const elapsed = performance.now() - started
  const frames = () => raw.frames.filter((f) => f.action === 15)
  await raw.next(() => frames().flatMap((f) => f.messages).length >= 5, 10_000)
  expect(frames().flatMap((f) => f.messages.map((m: { data: string }) => m.data))).toEqual(['0', '1', '2', '3', '4'])
  expect(frames().length).toBeLessThanOrEqual(1 + Math.ceil(elapsed / INTERVAL))
})

test('event streams: conflated and batched alike', async () => {
  const open = async (name: string) => {
    const s = await openSse(
      `${rt.base}/sse?v=1.2&key=${encodeURIComponent(rt.gw.key)}&channels=${encodeURIComponent(name)}`,
    )
    streams.push(s)
    expect(s.status).toBe(200)
    for (let i = 0; i < 400 && rt.gw.core.hub.count(APP_ID, name) < 1; i++) await Bun.sleep(5)
    return s
  }
  const name = fresh('conflated:sse')
  const s = await open(name)
  const r = await rt.gw.request(messagesPath(name), { method: 'POST', json: TICKS })
  expect(r.status).toBe(201)
  await s.until((e) => messages(e).length >= 4)
  await publishOne(rt.gw, name, { name: 'tick', data: 'A5', extras: { headers: { market: 'A' } } })
  await s.until((e) => messages(e).length >= 5)
  expect(messages(s.events).map((e) => JSON.parse(e.data).data)).toEqual([...LATEST, 'A5'])
  const batched = fresh('batched:sse')
  const b = await open(batched)
  const started = performance.now()
  for (let i = 0; i < 3; i++) await publishOne(rt.gw, batched, { name: 'm', data: String(i) })
  await b.until((e) => messages(e).length >= 3)
  expect(performance.now() - started).toBeGreaterThanOrEqual(INTERVAL - 50)
  expect(messages(b.events).map((e) => JSON.parse(e.data).data)).toEqual(['0', '1', '2'])
})

test('a conflationKey outside the routing and conflation syntax is 40000; a valid one is stored', async () => {
  const post = (json: Record<string, unknown>) =>
    rt.gw.request(`/v1/apps/${APP_ID}/namespaces`, {
      method: 'POST',
      json,
      key: null,
      headers: { authorization: `Bearer ${ACCESS_TOKEN}` },
    })
  for (const conflationKey of ['#{message.name', '#{message.data}', '#{channelName | md5}']) {
    const r = await post({ id: 'badkey', conflationEnabled: true, conflationInterval: 100, conflationKey })
    expect(r.status).toBe(400)
    expect(r.headers.get('x-ably-errorcode')).toBe('40000')
  }
  const ok = await post({
    id: 'goodkey',
    conflationEnabled: true,
    conflationInterval: 100,
    conflationKey: '#{message.name}',
  })
  expect(ok.status).toBe(201)
})
