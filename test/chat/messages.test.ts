import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { pack, unpack } from 'msgpackr'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { as, expectError, json, keyWith, room, send } from './chat-fixture'

let gw: TestGateway
let publishOnly: string
let editOwn: string
let editAny: string
let reader: string
beforeAll(async () => {
  gw = await createTestGateway()
  publishOnly = await keyWith(gw, 'pub', { '*': ['publish'] })
  editOwn = await keyWith(gw, 'own', { '*': ['publish', 'message-update-own', 'message-delete-own'] })
  editAny = await keyWith(gw, 'any', { 'mod:*': ['message-update-any', 'message-delete-any'] })
  reader = await keyWith(gw, 'reader', { '*': ['history'] })
})
afterAll(async () => {
  await gw.close()
})

const patch = (
  name: string,
  serial: string,
  body: unknown,
  init: { headers?: Record<string, string>; key?: string } = {},
) => gw.request(`${room(name)}/messages/${encodeURIComponent(serial)}`, { method: 'PATCH', json: body, ...init })
const del = (name: string, serial: string, init: { headers?: Record<string, string>; key?: string } = {}) =>
  gw.request(`${room(name)}/messages/${encodeURIComponent(serial)}`, { method: 'DELETE', ...init })
const getOne = (name: string, serial: string) => gw.request(`${room(name)}/messages/${encodeURIComponent(serial)}`)

describe('send', () => {
  test('201 with serial, text, metadata, headers, clientId from the credentials and timestamps', async () => {
    const m = await send(
      gw,
      'm1',
      { text: 'hello', metadata: { a: 1 }, headers: { lang: 'en', n: 2 } },
      { headers: as('alice') },
    )
    expect(m).toMatchObject({
      roomId: 'm1',
      text: 'hello',
      metadata: { a: 1 },
      headers: { lang: 'en', n: 2 },
      clientId: 'alice',
      action: 'message.create',
    })
    expect(typeof m.serial).toBe('string')
    expect(m.createdAt).toBe(m.timestamp)
    expect(Math.abs(m.timestamp - Date.now())).toBeLessThan(10_000)
    expect(m.version).toEqual({ serial: m.serial, timestamp: m.timestamp })
    expect(m.reactions).toEqual({ unique: {}, distinct: {}, multiple: {} })
  })

  test('serials order the messages of a room', async () => {
    const serials: string[] = []
    for (let i = 0; i < 5; i++) serials.push((await send(gw, 'm2', { text: `t${i}` })).serial)
    expect([...serials].sort()).toEqual(serials)
    expect(new Set(serials).size).toBe(5)
  })

  test('metadata and headers default to empty objects; no credentials clientId means no clientId', async () => {
    const m = await send(gw, 'm3', { text: 'x' })
    expect(m.metadata).toEqual({})
    expect(m.headers).toEqual({})
    expect(m.clientId).toBeUndefined()
  })

  test.each([
    ['empty text', { text: '' }],
    ['missing text', { metadata: {} }],
    ['text not a string', { text: 5 }],
    ['metadata not an object', { text: 'x', metadata: 'm' }],
    ['headers not an object', { text: 'x', headers: [1] }],
    ['header value an object', { text: 'x', headers: { h: { deep: 1 } } }],
  ])('%s is 400', async (_why, body) => {
    await expectError(await gw.request(`${room('m4')}/messages`, { method: 'POST', json: body }), 400, 40001)
  })

  test('no body is 400; a malformed body is 400', async () => {
    await expectError(await gw.request(`${room('m4')}/messages`, { method: 'POST' }), 400, 40001)
    await expectError(
      await gw.request(`${room('m4')}/messages`, {
        method: 'POST',
        body: '{',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      40001,
    )
  })

  test('a message over the size limit is 413', async () => {
    await expectError(
      await gw.request(`${room('m4')}/messages`, {
        method: 'POST',
        json: { text: 'x'.repeat(gw.config.maxMessageSize + 1) },
      }),
      413,
      40009,
    )
  })

  test('credentials: none is 401, without publish is 403 / 40160, publish alone is enough', async () => {
    await expectError(
      await gw.request(`${room('m4')}/messages`, { method: 'POST', json: { text: 'x' }, key: null }),
      401,
      40101,
    )
    await expectError(
      await gw.request(`${room('m4')}/messages`, { method: 'POST', json: { text: 'x' }, key: reader }),
      403,
      40160,
    )
    expect(
      (await gw.request(`${room('m4')}/messages`, { method: 'POST', json: { text: 'x' }, key: publishOnly })).status,
    ).toBe(201)
  })

  test('invalid room ids are 400', async () => {
    await expectError(
      await gw.request(`${room('a::$x')}/messages`, { method: 'POST', json: { text: 'x' } }),
      400,
      40010,
    )
    await expectError(
      await gw.request(`${room('[meta]x')}/messages`, { method: 'POST', json: { text: 'x' } }),
      400,
      40010,
    )
  })

  test('idempotencyKey: a repeat returns the first message and sends nothing', async () => {
    const a = await json(
      await gw.request(`${room('m5')}/messages?idempotencyKey=k1`, { method: 'POST', json: { text: 'once' } }),
      201,
    )
    const b = await json(
      await gw.request(`${room('m5')}/messages?idempotencyKey=k1`, { method: 'POST', json: { text: 'once' } }),
      201,
    )
    expect(b.serial).toBe(a.serial)
    expect(await json(await gw.request(`${room('m5')}/messages`))).toHaveLength(1)
  })

  test('msgpack in and out', async () => {
    const r = await gw.request(`${room('m6')}/messages`, {
      method: 'POST',
      body: new Uint8Array(pack({ text: 'packed', metadata: { k: true } })),
      headers: { 'content-type': 'application/x-msgpack', accept: 'application/x-msgpack' },
    })
    expect(r.status).toBe(201)
    expect(r.headers.get('content-type')).toBe('application/x-msgpack')
    expect(unpack(new Uint8Array(await r.arrayBuffer()))).toMatchObject({ text: 'packed', metadata: { k: true } })
  })
})

describe('one message', () => {
  test('GET by serial; an unknown or malformed serial is 404 / 40160', async () => {
    const m = await send(gw, 'g1', { text: 'find me' })
    expect(await json(await getOne('g1', m.serial))).toMatchObject({ serial: m.serial, text: 'find me' })
    await expectError(await getOne('g1', '00000000000001-000000'), 404, 40160)
    await expectError(await getOne('g1', 'nonsense'), 404, 40160)
    await expectError(await getOne('other-room', m.serial), 404, 40160)
  })
})

describe('update', () => {
  test('PATCH keeps the serial, bumps the version and records who and when', async () => {
    const m = await send(gw, 'u1', { text: 'v0', metadata: { keep: 1 }, headers: { h: '1' } }, { headers: as('alice') })
    const u1 = await json(await patch('u1', m.serial, { text: 'v1', description: 'typo' }, { headers: as('bob') }))
    expect(u1).toMatchObject({
      serial: m.serial,
      text: 'v1',
      metadata: { keep: 1 },
      headers: { h: '1' },
      action: 'message.update',
      clientId: 'alice',
      timestamp: m.timestamp,
    })
    expect(u1.version).toMatchObject({ clientId: 'bob', description: 'typo' })
    expect(u1.version.serial > m.version.serial).toBe(true)
    expect(u1.version.timestamp).toBeGreaterThanOrEqual(m.timestamp)
    const u2 = await json(await patch('u1', m.serial, { metadata: { new: true } }))
    expect(u2).toMatchObject({ text: 'v1', metadata: { new: true } })
    expect(u2.version.serial > u1.version.serial).toBe(true)
    const [inHistory] = await json(await gw.request(`${room('u1')}/messages`))
    expect(inHistory).toEqual(u2)
    expect(await json(await getOne('u1', m.serial))).toEqual(u2)
  })

  test("an edit is a version of the room channel's message: the channel's message routes show it", async () => {
    const m = await send(gw, 'u-chan', { text: 'v0', headers: { h: '1' } }, { headers: as('alice') })
    const u1 = await json(await patch('u-chan', m.serial, { text: 'v1', description: 'typo' }, { headers: as('bob') }))
    const path = `/channels/${encodeURIComponent('u-chan::$chat')}/messages/${encodeURIComponent(m.serial)}`
    const latest = await json(await gw.request(path))
    expect(latest).toMatchObject({
      serial: m.serial,
      action: 1,
      name: 'chat.message',
      clientId: 'alice',
      extras: { headers: { h: '1' } },
      version: { serial: u1.version.serial, timestamp: u1.version.timestamp, clientId: 'bob', description: 'typo' },
    })
    expect(JSON.parse(latest.data)).toEqual({ text: 'v1', metadata: {} })
    const versions = await json(await gw.request(`${path}/versions`))
    expect(versions.map((v: any) => [v.action, v.version?.serial ?? v.serial])).toEqual([
      [0, m.serial],
      [1, u1.version.serial],
    ])
  })

  test('concurrent updates of one message all land, each a version, the latest the one with the greatest serial', async () => {
    const m = await send(gw, 'u-race', { text: 'v0' })
    const texts = ['a', 'b', 'c', 'd', 'e']
    const made = await Promise.all(texts.map((text) => patch('u-race', m.serial, { text }).then(json)))
    const serials = made.map((u: any) => u.version.serial)
    expect(new Set(serials).size).toBe(texts.length)
    const newest = made.reduce((a: any, b: any) => (b.version.serial > a.version.serial ? b : a))
    expect(await json(await getOne('u-race', m.serial))).toEqual(newest)
    const path = `/chat/v4/rooms/u-race/messages/${encodeURIComponent(m.serial)}/versions`
    const versions = await json(await gw.request(path, { headers: { 'x-ably-version': '4' } }))
    expect(versions.map((v: any) => v.version.serial)).toEqual([m.serial, ...[...serials].sort()])
  })

  test('errors: unknown message 404, empty text 400, nothing to update 400, too large 413', async () => {
    const m = await send(gw, 'u2', { text: 'x' })
    await expectError(await patch('u2', '00000000000001-000000', { text: 'y' }), 404, 40160)
    await expectError(await patch('u2', m.serial, { text: '' }), 400, 40001)
    await expectError(await patch('u2', m.serial, {}), 400, 40001)
    await expectError(await patch('u2', m.serial, { metadata: 'x' }), 400, 40001)
    await expectError(await patch('u2', m.serial, { text: 'y'.repeat(gw.config.maxMessageSize) }), 413, 40009)
    expect((await json(await getOne('u2', m.serial))).text).toBe('x')
  })

  test('message-update-own allows the author only; message-update-any allows anyone', async () => {
    const mine = await send(gw, 'u3', { text: 'mine' }, { key: editOwn, headers: as('carol') })
    expect((await patch('u3', mine.serial, { text: 'ok' }, { key: editOwn, headers: as('carol') })).status).toBe(200)
    await expectError(await patch('u3', mine.serial, { text: 'no' }, { key: editOwn, headers: as('dave') }), 403, 40160)
    await expectError(await patch('u3', mine.serial, { text: 'no' }, { key: publishOnly }), 403, 40160)
    const modded = await send(gw, 'mod:1', { text: 'spam' }, { headers: as('eve') })
    expect((await patch('mod:1', modded.serial, { text: '[removed]' }, { key: editAny })).status).toBe(200)
  })
})

describe('delete', () => {
  test('soft delete: the message stays in history, marked deleted with its action and version', async () => {
    const keep = await send(gw, 'd1', { text: 'stays' })
    const m = await send(gw, 'd1', { text: 'bye', metadata: { a: 1 }, headers: { h: 'x' } }, { headers: as('alice') })
    const d = await json(await del('d1', m.serial, { headers: as('mod') }))
    expect(d).toMatchObject({
      serial: m.serial,
      action: 'message.delete',
      text: '',
      metadata: {},
      headers: {},
      clientId: 'alice',
    })
    expect(d.version.clientId).toBe('mod')
    expect(d.version.serial > m.version.serial).toBe(true)
    const history = await json(await gw.request(`${room('d1')}/messages?direction=forwards`))
    expect(history.map((x: any) => [x.serial, x.action])).toEqual([
      [keep.serial, 'message.create'],
      [m.serial, 'message.delete'],
    ])
    expect((await json(await del('d1', m.serial))).version).toEqual(d.version)
    await expectError(await patch('d1', m.serial, { text: 'back' }), 400, 40000)
  })

  test('unknown message 404; message-delete-own allows the author only', async () => {
    await expectError(await del('d2', '00000000000001-000000'), 404, 40160)
    const mine = await send(gw, 'd2', { text: 'mine' }, { key: editOwn, headers: as('carol') })
    await expectError(await del('d2', mine.serial, { key: editOwn, headers: as('dave') }), 403, 40160)
    expect((await del('d2', mine.serial, { key: editOwn, headers: as('carol') })).status).toBe(200)
  })
})
