/**
 * What the official client's own LiveObjects suite (ably-js `test/realtime/liveobjects.test.js`,
 * run against the hosted service) expects of a server, with the official client (both formats,
 * every backend): MAP_CLEAR on root sent as the suite sends it (`channel.sendState`), an
 * operation sized by the client's rule (OM3) and not by its JSON text, the partial OBJECT_SYNC of
 * a map larger than a message, and a counter refused past a finite number.
 */
import { describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { LiveCounter, LiveMap, LiveObjects } from 'ably/liveobjects'
import { ablyError } from '../helpers/ably'
import { connectedClient, FORMATS, fresh, realtimeGateway } from '../helpers/realtime'
import { eventually, MODES } from './live-util'

const rt = realtimeGateway()

const clearRoot = { operation: { action: 6, objectId: 'root', mapClear: {} } }

describe.each(FORMATS)('LiveObjects conformance over %s', (_format, binary) => {
  const client = () =>
    connectedClient(rt.port, { key: rt.gw.key, plugins: { LiveObjects } } as Ably.ClientOptions, binary)
  const rootOf = async (c: Ably.Realtime, name: string) => {
    const ch = c.channels.get(name, { modes: MODES })
    return { ch: ch as any, root: await (ch as any).object.get() }
  }

  test('MAP_CLEAR on root: every entry goes for every client; entries set after it stay; a late client syncs it', async () => {
    const name = fresh('lo-clear')
    const a = await rootOf(await client(), name)
    const b = await rootOf(await client(), name)
    await a.root.set('foo', 'bar')
    await a.root.set('baz', 42)
    await a.root.set('counter', LiveCounter.create(1))
    await eventually(() => expect(Object.keys(b.root.compact()).length).toBe(3))
    const seen: string[] = []
    b.root.subscribe((e: any) => seen.push(e?.message?.operation?.action))
    await a.ch.sendState([clearRoot])
    await eventually(() => expect(a.root.compact()).toEqual({}))
    await eventually(() => expect(b.root.compact()).toEqual({}))
    expect(seen).toContain('map.clear')
    await a.root.set('after', 1)
    await eventually(() => expect(b.root.compact()).toEqual({ after: 1 }))
    const c = await rootOf(await client(), name)
    expect(c.root.compact()).toEqual({ after: 1 })
    expect(await rt.rest({ binary }).request('get', `/channels/${name}/object`, 3, null, null)).toMatchObject({
      statusCode: 200,
      items: [{ after: 1 }],
    })
  })

  test('MAP_CLEAR of a map other than root is refused with 92000', async () => {
    const name = fresh('lo-clear-map')
    const a = await rootOf(await client(), name)
    await a.root.set('m', LiveMap.create({ k: 1 }))
    const id = a.root.get('m').instance().id
    const err = await ablyError(a.ch.sendState([{ operation: { action: 6, objectId: id, mapClear: {} } }]))
    expect([err.code, err.statusCode]).toEqual([92000, 400])
    expect(a.root.compact()).toEqual({ m: { k: 1 } })
  })

  test("an operation as large as the client's own check allows is accepted; a map larger than a message syncs in parts", async () => {
    const name = fresh('lo-partial')
    const a = await rootOf(await client(), name)
    const rest = rt.rest({ binary })
    const max = 65_536
    const keys = ['largeKey1', 'largeKey2', 'largeKey3']
    // the suite's "partial OBJECT_SYNC" test: key length + value length is exactly maxMessageSize
    const large = 'x'.repeat(max - keys[0]!.length)
    for (const key of keys) {
      const r = await rest.request('post', `/channels/${name}/object`, 3, null, [
        { objectId: 'root', mapSet: { key, value: { string: large } } },
      ])
      expect(r.statusCode).toBe(200)
    }
    // over realtime too, by the client's own rule
    await a.root.set('largeKey4', large)
    await eventually(() => expect(Object.keys(a.root.compact()).length).toBe(4))
    const c = await client()
    const transport = (c.connection as any).connectionManager.activeProtocol.getTransport()
    const original = transport.onProtocolMessage
    let syncs = 0
    transport.onProtocolMessage = function (m: any) {
      if (m.action === 20) syncs++
      original.call(transport, m)
    }
    const late = await rootOf(c, name)
    expect(syncs).toBeGreaterThanOrEqual(4)
    for (const key of [...keys, 'largeKey4']) expect(late.root.get(key).value()).toBe(large)
    // one byte more is refused, as the client itself refuses it
    const err = await ablyError(a.root.set('largeKey1', large + 'x'))
    expect(err.code).toBe(40009)
  })
})

// the official client's msgpack encoder cannot write integers past 2^64 ("Number too big"): the
// writes are JSON, the reader msgpack
describe('a counter past a finite number', () => {
  const client = (binary: boolean) =>
    connectedClient(rt.port, { key: rt.gw.key, plugins: { LiveObjects } } as Ably.ClientOptions, binary)
  const rootOf = async (c: Ably.Realtime, name: string) => {
    const ch = c.channels.get(name, { modes: MODES })
    return { ch: ch as any, root: await (ch as any).object.get() }
  }

  test('the increment is refused (92000) over realtime and REST; the value stays for everyone', async () => {
    const name = fresh('lo-inf')
    const a = await rootOf(await client(false), name)
    const b = await rootOf(await client(true), name)
    await a.root.set('n', LiveCounter.create(0))
    await a.root.get('n').increment(1e308)
    const err = await ablyError(a.root.get('n').increment(1e308))
    expect([err.code, err.statusCode]).toEqual([92000, 400])
    const rest = rt.rest({ binary: false })
    const r = await rest.request('post', `/channels/${name}/object`, 3, null, [
      { path: 'n', counterInc: { number: -1e308 } },
      { path: 'n', counterInc: { number: -1e308 } },
      { path: 'n', counterInc: { number: -1e308 } },
    ])
    expect([r.statusCode, r.errorCode]).toEqual([400, 92000])
    await eventually(() => expect(b.root.get('n').value()).toBe(1e308))
    expect(a.root.get('n').value()).toBe(1e308)
    expect((await rootOf(await client(true), name)).root.get('n').value()).toBe(1e308)
    const read = await rt.rest({ binary: true }).request('get', `/channels/${name}/object`, 3, { path: 'n' }, null)
    expect(read.items).toEqual([1e308])
  })
})
