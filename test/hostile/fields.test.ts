import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { expectError } from '../helpers/errors'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { as, send } from '../chat/chat-fixture'
import { device, fcm } from '../push/push-fixture'

/**
 * Oversized fields: every field is either counted in MAX_MESSAGE_SIZE (as the hosted service
 * counts it) or bounded on its own, and a refusal stores nothing. On both backends.
 */
let gw: TestGateway
beforeAll(async () => {
  gw = await createTestGateway()
})
afterAll(async () => {
  await gw.close()
})

const long = (n: number) => 'x'.repeat(n)
const MIB = 1024 * 1024
const publish = (channel: string, body: unknown, headers: Record<string, string> = {}) =>
  gw.request(`/channels/${channel}/messages`, { method: 'POST', json: body, headers })
const history = async (channel: string) => (await gw.request(`/channels/${channel}/messages`)).json()

describe('channel messages', () => {
  test('a client-supplied id over 256 characters is 400 / 40031 and stores nothing', async () => {
    await expectError(await publish('f-id', { id: long(257), data: 'x' }), 400, 40031)
    await expectError(await publish('f-id', { id: long(1.5 * MIB), data: 'x' }), 400, 40031)
    await expectError(await publish('f-id', [{ id: `${long(300)}:0` }, { id: `${long(300)}:1` }]), 400, 40031)
    expect(await history('f-id')).toEqual([])
    expect((await publish('f-id', { id: long(256), data: 'x' })).status).toBe(201)
  })
  test('an encoding over 256 characters is 400 / 40013', async () => {
    await expectError(await publish('f-enc', { encoding: long(257), data: 'x' }), 400, 40013)
    await expectError(await publish('f-enc', { encoding: long(MIB), data: 'x' }), 400, 40013)
    expect(await history('f-enc')).toEqual([])
  })
  test('a clientId over 256 characters is 400 / 40012, in the body or in X-Ably-ClientId', async () => {
    await expectError(await publish('f-cid', { clientId: long(257), data: 'x' }), 400, 40012)
    await expectError(await publish('f-cid', { data: 'x' }, as(long(9000))), 400, 40012)
    expect(await history('f-cid')).toEqual([])
  })
  test('name, clientId, extras and data count against MAX_MESSAGE_SIZE (413 / 40009)', async () => {
    const max = gw.config.maxMessageSize
    await expectError(await publish('f-size', { name: long(max + 1) }), 413, 40009)
    await expectError(await publish('f-size', { name: long(max / 2), data: long(max / 2 + 1) }), 413, 40009)
    await expectError(await publish('f-size', { extras: { headers: { h: long(max) } } }), 413, 40009)
    expect(await history('f-size')).toEqual([])
  })
  test('batch publish: an oversized id fails its channel inside the 201', async () => {
    const r = await gw.request('/messages', {
      method: 'POST',
      json: { channels: ['f-batch'], messages: { id: long(MIB), data: 'x' } },
    })
    expect(r.status).toBe(201)
    const [result] = (await r.json()) as any[]
    expect(result.failureCount).toBe(1)
    expect(result.results[0].error.code).toBe(40031)
  })
})

describe('chat', () => {
  test('an idempotencyKey over 256 characters is 400 / 40003', async () => {
    const r = await gw.request(`/chat/rooms/f-room/messages?idempotencyKey=${long(300)}`, {
      method: 'POST',
      json: { text: 'hi' },
    })
    await expectError(r, 400, 40003)
  })
  test("an edit's description and metadata count against MAX_MESSAGE_SIZE", async () => {
    const max = gw.config.maxMessageSize
    const m = await send(gw, 'f-edit', { text: 'hello' })
    const path = `/chat/v4/rooms/f-edit/messages/${encodeURIComponent(m.serial)}`
    const message = { text: 'edited' }
    await expectError(await gw.request(path, { method: 'PUT', json: { message, description: long(max) } }), 413, 40009)
    await expectError(
      await gw.request(path, { method: 'PUT', json: { message, metadata: { m: long(max) } } }),
      413,
      40009,
    )
    await expectError(
      await gw.request(`${path}/delete`, { method: 'POST', json: { description: long(max) } }),
      413,
      40009,
    )
    const unchanged = (await (await gw.request(path)).json()) as any
    expect(unchanged).toMatchObject({ text: 'hello', action: 'message.create' })
    expect((await gw.request(path, { method: 'PUT', json: { message, description: 'fixed a typo' } })).status).toBe(200)
  })
  test('typing and reactions refuse a clientId over 256 characters (400 / 40012)', async () => {
    await expectError(
      await gw.request('/chat/rooms/f-typing/typing', {
        method: 'POST',
        json: { clientId: long(257), isTyping: true },
      }),
      400,
      40012,
    )
    const m = await send(gw, 'f-react', { text: 'react to me' })
    await expectError(
      await gw.request(`/chat/rooms/f-react/messages/${encodeURIComponent(m.serial)}/reactions`, {
        method: 'POST',
        json: { type: 'like', clientId: long(257) },
      }),
      400,
      40012,
    )
  })
})

describe('LiveObjects', () => {
  test('a patch over 64 KiB is 413 / 40009 even when it would leave the state small', async () => {
    const nulls = Object.fromEntries(Array.from({ length: 8000 }, (_, i) => [`key-${i}-${long(4)}`, null]))
    await expectError(
      await gw.request('/liveobjects/f-ns/objects/o1', { method: 'PATCH', json: { data: nulls } }),
      413,
      40009,
    )
  })
  test('a version over 64 characters is 400 / 40001', async () => {
    await expectError(
      await gw.request('/liveobjects/f-ns/objects/o2', {
        method: 'PATCH',
        json: { data: { a: 1 }, version: long(MIB) },
      }),
      400,
      40001,
    )
  })
})

describe('push', () => {
  test('a notification payload over MAX_MESSAGE_SIZE is 413 / 40009', async () => {
    const r = await gw.request('/push/publish', {
      method: 'POST',
      json: { recipient: fcm(), notification: { title: 't', body: long(gw.config.maxMessageSize) } },
    })
    await expectError(r, 413, 40009)
  })
  test('device metadata, recipient and secret are bounded (400 / 40001) and nothing is registered', async () => {
    const register = (body: unknown) => gw.request('/push/deviceRegistrations', { method: 'POST', json: body })
    await expectError(await register(device('f-dev-1', { metadata: { m: long(5000) } })), 400, 40001)
    await expectError(await register(device('f-dev-2', {}, fcm(long(5000)))), 400, 40001)
    await expectError(await register(device('f-dev-3', { deviceSecret: long(257) })), 400, 40001)
    await expectError(await register(device('f-dev-4', { clientId: long(257) })), 400, 40001)
    for (const id of ['f-dev-1', 'f-dev-2', 'f-dev-3', 'f-dev-4'])
      expect((await gw.request(`/push/deviceRegistrations/${id}`)).status).toBe(404)
  })
})
