import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { as, expectError, json, keyWith, room, send } from './chat-fixture'

let gw: TestGateway
beforeAll(async () => {
  gw = await createTestGateway()
})
afterAll(async () => {
  await gw.close()
})

const path = (name: string, serial: string) => `${room(name)}/messages/${encodeURIComponent(serial)}/reactions`
const react = (
  name: string,
  serial: string,
  body: unknown,
  init: { headers?: Record<string, string>; key?: string } = {},
) => gw.request(path(name, serial), { method: 'POST', json: body, ...init })
const list = async (name: string, serial: string) => json(await gw.request(path(name, serial)))

describe('distinct (the default)', () => {
  test('add with type and metadata; list with a per-type summary of counts and clientIds', async () => {
    const m = await send(gw, 'x1', { text: 'react to me' })
    const r = await json(
      await react('x1', m.serial, { type: 'like', metadata: { from: 'web' } }, { headers: as('amy') }),
      201,
    )
    expect(r).toMatchObject({
      messageSerial: m.serial,
      type: 'like',
      kind: 'distinct',
      clientId: 'amy',
      count: 1,
      metadata: { from: 'web' },
    })
    expect(typeof r.serial).toBe('string')
    expect(r.summary).toEqual({ like: { count: 1, clientIds: ['amy'] } })
    await json(await react('x1', m.serial, { type: 'like' }, { headers: as('bob') }), 201)
    await json(await react('x1', m.serial, { type: 'like' }, { headers: as('bob') }), 201) // a repeat counts once
    await json(await react('x1', m.serial, { type: 'heart' }, { headers: as('bob') }), 201)
    const l = await list('x1', m.serial)
    expect(l.summary).toEqual({
      like: { count: 2, clientIds: ['amy', 'bob'] },
      heart: { count: 1, clientIds: ['bob'] },
    })
    expect(l.reactions.distinct).toEqual({
      like: { total: 2, clientIds: ['amy', 'bob'], clipped: false },
      heart: { total: 1, clientIds: ['bob'], clipped: false },
    })
    expect(l.items).toHaveLength(3)
    expect(l.items[0]).toMatchObject({ type: 'like', kind: 'distinct', clientId: 'amy', metadata: { from: 'web' } })
    // the message itself carries the summary
    const [msg] = await json(await gw.request(`${room('x1')}/messages`))
    expect(msg.reactions.distinct.like.total).toBe(2)
  })

  test('remove', async () => {
    const m = await send(gw, 'x2', { text: 'x' })
    await json(await react('x2', m.serial, { type: 'like' }, { headers: as('amy') }), 201)
    const r = await json(
      await gw.request(`${path('x2', m.serial)}?type=like`, { method: 'DELETE', headers: as('amy') }),
    )
    expect(r.summary).toEqual({})
    expect((await list('x2', m.serial)).items).toEqual([])
  })
})

describe('unique and multiple', () => {
  test('unique: one reaction per client, a new one replaces the old', async () => {
    const m = await send(gw, 'x3', { text: 'x' })
    await json(await react('x3', m.serial, { type: 'like', kind: 'unique' }, { headers: as('amy') }), 201)
    await json(await react('x3', m.serial, { type: 'heart', kind: 'unique' }, { headers: as('amy') }), 201)
    await json(await react('x3', m.serial, { type: 'heart', kind: 'unique' }, { headers: as('bob') }), 201)
    const l = await list('x3', m.serial)
    expect(l.reactions.unique).toEqual({ heart: { total: 2, clientIds: ['amy', 'bob'], clipped: false } })
    expect(l.summary).toEqual({ heart: { count: 2, clientIds: ['amy', 'bob'] } })
  })

  test('multiple: counted, with a count per client', async () => {
    const m = await send(gw, 'x4', { text: 'x' })
    await json(await react('x4', m.serial, { type: 'clap', kind: 'multiple', count: 3 }, { headers: as('amy') }), 201)
    await json(await react('x4', m.serial, { type: 'clap', kind: 'multiple' }, { headers: as('amy') }), 201)
    await json(await react('x4', m.serial, { type: 'clap', kind: 'multiple', count: 2 }, { headers: as('bob') }), 201)
    const l = await list('x4', m.serial)
    expect(l.reactions.multiple).toEqual({
      clap: { total: 6, clientIds: { amy: 4, bob: 2 }, totalUnidentified: 0, clipped: false, totalClientIds: 2 },
    })
    expect(l.summary).toEqual({ clap: { count: 6, clientIds: ['amy', 'bob'] } })
  })

  test('the hosted form {type: kind, name, count} is accepted too', async () => {
    const m = await send(gw, 'x5', { text: 'x' })
    await json(await react('x5', m.serial, { type: 'multiple', name: '🎉', count: 2 }, { headers: as('amy') }), 201)
    await json(await react('x5', m.serial, { type: 'reaction:unique.v1', name: '👍' }, { headers: as('amy') }), 201)
    const l = await list('x5', m.serial)
    expect(l.reactions.multiple['🎉'].total).toBe(2)
    expect(l.reactions.unique['👍'].clientIds).toEqual(['amy'])
  })
})

describe('errors', () => {
  test('unknown message is 404 / 40160 (add and list)', async () => {
    await send(gw, 'x6', { text: 'x' })
    await expectError(await react('x6', '00000000000001-000000', { type: 'like' }, { headers: as('amy') }), 404, 40160)
    await expectError(await gw.request(path('x6', '00000000000001-000000')), 404, 40160)
  })

  test.each([
    ['no type', {}],
    ['empty type', { type: '' }],
    ['unknown kind', { type: 'like', kind: 'many' }],
    ['count on a distinct reaction', { type: 'like', count: 2 }],
    ['count out of range', { type: 'like', kind: 'multiple', count: 0 }],
    ['metadata not an object', { type: 'like', metadata: 'x' }],
  ])('%s is 400', async (_why, body) => {
    const m = await send(gw, 'x7', { text: 'x' })
    await expectError(await react('x7', m.serial, body, { headers: as('amy') }), 400, 40001)
  })

  test('a reaction needs a client; a clientId not matching the credentials is 400 / 40012', async () => {
    const m = await send(gw, 'x8', { text: 'x' })
    await expectError(await react('x8', m.serial, { type: 'like' }), 400, 40012)
    await expectError(
      await react('x8', m.serial, { type: 'like', clientId: 'bob' }, { headers: as('amy') }),
      400,
      40012,
    )
    expect((await react('x8', m.serial, { type: 'like', clientId: 'bob' })).status).toBe(201)
  })

  test('a deleted message takes no reactions', async () => {
    const m = await send(gw, 'x9', { text: 'x' })
    await json(await gw.request(`${room('x9')}/messages/${m.serial}`, { method: 'DELETE' }))
    await expectError(await react('x9', m.serial, { type: 'like' }, { headers: as('amy') }), 400, 40000)
  })

  test('capabilities: publish (or annotation-publish) to react, history to list', async () => {
    const m = await send(gw, 'x10', { text: 'x' })
    const ro = await keyWith(gw, 'ro', { '*': ['history'] })
    const annot = await keyWith(gw, 'annot', { '*': ['annotation-publish'] })
    const noHistory = await keyWith(gw, 'nohist', { '*': ['publish'] })
    await expectError(await react('x10', m.serial, { type: 'like' }, { key: ro, headers: as('amy') }), 403, 40160)
    expect((await react('x10', m.serial, { type: 'like' }, { key: annot, headers: as('amy') })).status).toBe(201)
    await expectError(await gw.request(path('x10', m.serial), { key: noHistory }), 403, 40160)
    expect((await gw.request(path('x10', m.serial), { key: ro })).status).toBe(200)
  })
})
