/**
 * The plugin's LiveObjects over REST with the official client (`channel.object` on `Ably.Rest`,
 * msgpack and JSON), on every backend: publishing every operation kind by id and by path (creates
 * at a path, wildcards, idempotent ids), reading compact and full forms by id and path, the plural
 * path the client's own fixtures use, the error shapes, and the one store REST and realtime share.
 */
import { describe, expect, test } from 'bun:test'
import * as Ably from 'ably'
import { LiveCounter, LiveMap, LiveObjects } from 'ably/liveobjects'
import { ablyError } from '../helpers/ably'
import { addKey } from '../helpers/gateway'
import { connectedClient, FORMATS, fresh, realtimeGateway } from '../helpers/realtime'
import { eventually, MODES } from './live-util'

const rt = realtimeGateway()

describe.each(FORMATS)('LiveObjects REST over %s', (_format, binary) => {
  const rest = (key = rt.gw.key) => rt.rest({ key, binary, plugins: { LiveObjects } })
  const objectOf = (name: string, key?: string) => (rest(key).channels.get(name) as any).object

  test('publish by path and id, read compact and full, by id and by path', async () => {
    const obj = objectOf(fresh('lo-rest'))
    const counter = await obj.publish({ path: 'votes', counterCreate: { count: 5 } })
    expect(counter.objectIds.length).toBe(1)
    expect(counter.objectIds[0]).toMatch(/^counter:/)
    expect(typeof counter.messageId).toBe('string')
    await obj.publish({ path: 'votes', counterInc: { number: 3 } })
    const map = await obj.publish({
      path: 'cfg',
      mapCreate: { semantics: 'lww', entries: { theme: { data: { string: 'dark' } } } },
    })
    await obj.publish([{ objectId: map.objectIds[0], mapSet: { key: 'size', value: { number: 14 } } }])
    await obj.publish({ objectId: 'root', mapSet: { key: 'title', value: { string: 'hello' } } })
    await obj.publish({ objectId: 'root', mapSet: { key: 'data', value: { json: { a: [1, 2] } } } })
    expect(await obj.get()).toEqual({ votes: 8, cfg: { theme: 'dark', size: 14 }, title: 'hello', data: '{"a":[1,2]}' })
    expect(await obj.get({ path: 'votes' })).toBe(8)
    expect(await obj.get({ path: 'cfg.theme' })).toBe('dark')
    expect(await obj.get({ objectId: map.objectIds[0] })).toEqual({ theme: 'dark', size: 14 })
    const full = await obj.get({ compact: false })
    expect(full.objectId).toBe('root')
    expect(full.map.semantics).toBe('lww')
    expect(full.map.entries.votes.data).toEqual({ objectId: counter.objectIds[0], counter: { data: { number: 8 } } })
    expect(full.map.entries.title.data).toEqual({ string: 'hello' })
    // a wildcard applies to every match
    await obj.publish({ path: 'cfg', mapSet: { key: 'theme', value: { string: 'light' } } })
    const all = await obj.publish({ path: '*', mapSet: { key: 'seen', value: { boolean: true } } })
    expect(all.objectIds).toEqual([map.objectIds[0]])
    expect(await obj.get({ path: 'cfg' })).toEqual({ theme: 'light', size: 14, seen: true })
  })

  test('an operation with the same id is applied once', async () => {
    const obj = objectOf(fresh('lo-idem'))
    await obj.publish({ path: 'n', counterCreate: { count: 0 } })
    for (let i = 0; i < 3; i++) await obj.publish({ id: 'inc-once', path: 'n', counterInc: { number: 1 } })
    expect(await obj.get({ path: 'n' })).toBe(1)
  })

  test('errors: unknown object 404/92004, a path to nothing 92005, no target 92006, no capability 40160', async () => {
    const obj = objectOf(fresh('lo-err'))
    const e1 = await ablyError(obj.get({ objectId: 'map:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA@1' }))
    expect([e1.statusCode, e1.code]).toEqual([404, 92004])
    const e2 = await ablyError(obj.get({ path: 'no.such' }))
    expect([e2.statusCode, e2.code]).toEqual([400, 92005])
    const e3 = await ablyError(obj.publish({ mapSet: { key: 'k', value: { string: 'v' } } }))
    expect([e3.statusCode, e3.code]).toEqual([400, 92006])
    const e4 = await ablyError(obj.publish({ objectId: 'root', counterInc: { number: 1 } }))
    expect([e4.statusCode, e4.code]).toEqual([400, 92000])
    const readOnly = await addKey(rt.gw, `ro-${binary}`, { capability: { '*': ['object-subscribe'] } })
    const e5 = await ablyError(
      objectOf('lo-err-ro', readOnly).publish({ objectId: 'root', mapSet: { key: 'k', value: { string: 'v' } } }),
    )
    expect([e5.statusCode, e5.code]).toEqual([403, 40160])
    expect(await objectOf('lo-err-ro', readOnly).get()).toEqual({})
    const none = await addKey(rt.gw, `none-${binary}`, { capability: { '*': ['publish'] } })
    const e6 = await ablyError(objectOf('lo-err-ro', none).get())
    expect([e6.statusCode, e6.code]).toEqual([403, 40160])
  })

  test('REST and realtime are one store: each sees what the other wrote', async () => {
    const name = fresh('lo-both')
    const client = await connectedClient(
      rt.port,
      { key: rt.gw.key, plugins: { LiveObjects } } as Ably.ClientOptions,
      binary,
    )
    const root = await (client.channels.get(name, { modes: MODES }) as any).object.get()
    await root.set('fromRealtime', LiveMap.create({ a: 1, c: LiveCounter.create(2) }))
    expect(await objectOf(name).get()).toEqual({ fromRealtime: { a: 1, c: 2 } })
    await objectOf(name).publish({ path: 'fromRealtime.c', counterInc: { number: 40 } })
    await eventually(() => expect(root.get('fromRealtime').get('c').value()).toBe(42))
    // the client library's own fixtures seed through the plural path
    const seeded = await rest().request('post', `/channels/${encodeURIComponent(name)}/objects`, 3, null, {
      path: 'seeded',
      counterCreate: { count: 7 },
    })
    expect(seeded.statusCode).toBe(200)
    expect((seeded.items[0] as any).objectIds[0]).toMatch(/^counter:/)
    await eventually(() => expect(root.get('seeded').value()).toBe(7))
  })
})
