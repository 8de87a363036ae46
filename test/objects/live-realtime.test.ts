/**
 * The official client's LiveObjects plugin (`ably/liveobjects`) over realtime, both wire formats,
 * on every backend: maps and counters created, set, removed and incremented by one client, seen
 * by a second one live and by a third that attaches later (OBJECT_SYNC of the whole tree), and a
 * client whose socket is cut resumes and sees the operations it missed.
 */
import { describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { LiveCounter, LiveMap, LiveObjects } from 'ably/liveobjects'
import { connectedClient, cutSocket, FORMATS, fresh, reach, realtimeGateway } from '../helpers/realtime'
import { messages, openSse } from '../helpers/sse'
import { eventually, MODES } from './live-util'

const rt = realtimeGateway()

describe.each(FORMATS)('LiveObjects plugin over %s', (_format, binary) => {
  const client = () =>
    connectedClient(rt.port, { key: rt.gw.key, plugins: { LiveObjects } } as Ably.ClientOptions, binary)
  const rootOf = async (c: Ably.Realtime, name: string) => {
    const ch = c.channels.get(name, { modes: MODES })
    return { ch, root: await (ch as any).object.get() }
  }

  test('maps and counters: a second client sees every operation, a third syncs the whole tree', async () => {
    const name = fresh('lo')
    const a = await rootOf(await client(), name)
    const b = await rootOf(await client(), name)
    expect(a.root.compact()).toEqual({})

    await a.root.set('title', 'hello')
    await a.root.set('votes', LiveCounter.create(10))
    await a.root.set('cfg', LiveMap.create({ theme: 'dark', n: 1, on: true, deep: { a: [1, 2] } }))
    await a.root.get('votes').increment(5)
    await a.root.get('votes').decrement(2)
    await a.root.get('cfg').remove('n')
    await a.root.get('cfg').set('size', 14)
    await a.root.set('nested', LiveMap.create({ inner: LiveCounter.create(3) }))
    await a.root.get('nested').get('inner').increment(4)
    const want = {
      title: 'hello',
      votes: 13,
      cfg: { theme: 'dark', on: true, deep: { a: [1, 2] }, size: 14 },
      nested: { inner: 7 },
    }
    // the publisher applied each on its ACK; the other client from the fan-out
    expect(a.root.compact()).toEqual(want)
    await eventually(() => expect(b.root.compact()).toEqual(want))

    const c = await rootOf(await client(), name)
    expect(c.root.compact()).toEqual(want)
    // and the late client's writes reach the others
    await c.root.get('votes').increment(100)
    await eventually(() => expect(a.root.get('votes').value()).toBe(113))
    await eventually(() => expect(b.root.get('votes').value()).toBe(113))
  })

  test('a tree of several OBJECT_SYNC pages syncs whole; operations are not message history', async () => {
    const name = fresh('lo-pages')
    const rest = rt.rest({ binary })
    for (let made = 0; made < 250; made += 50) {
      const ops = Array.from({ length: 50 }, (_, i) => ({ path: `c${made + i}`, counterCreate: { count: made + i } }))
      const r = await rest.request('post', `/channels/${name}/object`, 3, null, ops)
      expect(r.statusCode).toBe(200)
    }
    const { root } = await rootOf(await client(), name)
    const tree = root.compact()
    expect(Object.keys(tree).length).toBe(250)
    expect(tree.c249).toBe(249)
    // an event stream of the channel gets its messages, never the object operations
    const sse = await openSse(`${rt.base}/sse?v=1.2&channels=${name}&key=${encodeURIComponent(rt.gw.key)}`)
    await root.set('x', 1)
    await rest.channels.get(name).publish('m', 'after')
    await eventually(() => expect(messages(sse.events).length).toBe(1))
    expect(JSON.parse(messages(sse.events)[0]!.data).data).toBe('after')
    sse.close()
    const history = (await rest.channels.get(name).history()).items
    expect(history.map((m) => m.data)).toEqual(['after'])
  })

  test('binary values travel as bytes on both wires, in operations, creates and syncs', async () => {
    const name = fresh('lo-bytes')
    const a = await rootOf(await client(), name)
    const b = await rootOf(await client(), name)
    await a.root.set('raw', Buffer.from([0, 1, 2, 255]))
    await a.root.set('m', LiveMap.create({ inner: Buffer.from('hi') }))
    await eventually(() => expect(b.root.get('m')?.get('inner')?.value()).toBeDefined())
    const bytes = (v: unknown) => [...new Uint8Array(v as ArrayBuffer)]
    expect(bytes(b.root.get('raw').value())).toEqual([0, 1, 2, 255])
    expect(bytes(b.root.get('m').get('inner').value())).toEqual([...Buffer.from('hi')])
    const c = await rootOf(await client(), name)
    expect(bytes(c.root.get('raw').value())).toEqual([0, 1, 2, 255])
    expect(bytes(c.root.get('m').get('inner').value())).toEqual([...Buffer.from('hi')])
  })

  test('over comet (long polling) as over WebSocket: operations, echo, sync', async () => {
    const name = fresh('lo-comet')
    const comet = () =>
      connectedClient(
        rt.port,
        { key: rt.gw.key, plugins: { LiveObjects }, transports: ['comet'] } as Ably.ClientOptions,
        binary,
      )
    const a = await rootOf(await comet(), name)
    const b = await rootOf(await client(), name)
    await a.root.set('n', LiveCounter.create(1))
    await a.root.get('n').increment(2)
    await eventually(() => expect(b.root.get('n')?.value()).toBe(3))
    await b.root.get('n').increment(4)
    await eventually(() => expect(a.root.get('n').value()).toBe(7))
    expect((await rootOf(await comet(), name)).root.compact()).toEqual({ n: 7 })
  })

  test('subscriptions fire for operations made by another client', async () => {
    const name = fresh('lo-sub')
    const a = await rootOf(await client(), name)
    const b = await rootOf(await client(), name)
    await a.root.set('count', LiveCounter.create(0))
    await eventually(() => expect(b.root.get('count').value()).toBe(0))
    const seen: number[] = []
    b.root.get('count').subscribe(() => seen.push(b.root.get('count').value()))
    for (let i = 0; i < 5; i++) await a.root.get('count').increment(1)
    await eventually(() => expect(seen.at(-1)).toBe(5))
  })

  test('a client whose socket is cut resumes and sees the operations it missed', async () => {
    const name = fresh('lo-resume')
    const writer = await rootOf(await client(), name)
    const readerClient = await client()
    const reader = await rootOf(readerClient, name)
    await writer.root.set('n', LiveCounter.create(0))
    await eventually(() => expect(reader.root.get('n')?.value()).toBe(0))
    const id = readerClient.connection.id!
    cutSocket(rt.gw, id)
    for (let i = 0; i < 10; i++) await writer.root.get('n').increment(1)
    await writer.root.set('after', 'cut')
    await reach(readerClient.connection, 'connected')
    expect(readerClient.connection.id).toBe(id)
    await eventually(() => expect(reader.root.compact()).toEqual({ n: 10, after: 'cut' }))
    // live again after the resume
    await writer.root.get('n').increment(5)
    await eventually(() => expect(reader.root.get('n').value()).toBe(15))
  })
})
