/**
 * The hosted Chat REST API v4 paths, called exactly as the official chat client (@ably/chat
 * 1.x, ChatApi) calls them: through ably-js `request(method, '/chat/v4/rooms/...', 4, params,
 * body)`, over msgpack (the Node default) and over JSON.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import * as Ably from 'ably'
import { createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { expectError, v4room } from './chat-fixture'

let gw: TestGateway
let port: number
beforeAll(async () => {
  gw = await createTestGateway()
  port = Number(new URL(listen(gw)).port)
})
afterAll(async () => {
  await gw.close()
})

const client = (binary: boolean, clientId?: string) =>
  new Ably.Rest({
    key: gw.key,
    ...(clientId ? { clientId } : {}),
    endpoint: '127.0.0.1',
    port,
    tls: false,
    useBinaryProtocol: binary,
    logLevel: 0,
  })

/** What ChatApi._doRequest does: the first item of a successful response, else an ErrorInfo. */
async function call(rest: Ably.Rest, method: string, url: string, body?: unknown, params: Record<string, string> = {}) {
  const res = await rest.request(method, url, 4, params, body)
  if (!res.success) throw new Ably.ErrorInfo(res.errorMessage, res.errorCode, res.statusCode)
  return res
}
const one = async (rest: Ably.Rest, method: string, url: string, body?: unknown, params?: Record<string, string>) =>
  (await call(rest, method, url, body, params)).items[0] as any

for (const binary of [true, false]) {
  describe(binary ? 'msgpack' : 'json', () => {
    const name = `v4-${binary ? 'bin' : 'json'}`
    const roomUrl = `/chat/v4/rooms/${encodeURIComponent(name)}`
    const msgUrl = (serial: string, suffix = '') => `${roomUrl}/messages/${encodeURIComponent(serial)}${suffix}`

    test('send, get, history with pagination', async () => {
      const rest = client(binary, 'amy')
      const sent = await one(rest, 'POST', `${roomUrl}/messages`, {
        text: 'hi',
        metadata: { m: 1 },
        headers: { h: 'v' },
      })
      expect(sent).toMatchObject({
        text: 'hi',
        metadata: { m: 1 },
        headers: { h: 'v' },
        clientId: 'amy',
        action: 'message.create',
      })
      expect(sent.version).toEqual({ serial: sent.serial, timestamp: sent.timestamp })
      expect(sent.reactions).toEqual({ unique: {}, distinct: {}, multiple: {} })
      expect(sent.roomId).toBeUndefined()
      expect(await one(rest, 'GET', msgUrl(sent.serial))).toEqual(sent)
      for (let i = 0; i < 4; i++) await one(rest, 'POST', `${roomUrl}/messages`, { text: `n${i}` })
      const page1 = await call(rest, 'GET', `${roomUrl}/messages`, undefined, { limit: '2', direction: 'forwards' })
      expect(page1.items.map((m: any) => m.text)).toEqual(['hi', 'n0'])
      expect(page1.hasNext()).toBe(true)
      const page2 = (await page1.next())!
      expect(page2.items.map((m: any) => m.text)).toEqual(['n1', 'n2'])
      const page3 = (await page2.next())!
      expect(page3.items.map((m: any) => m.text)).toEqual(['n3'])
      expect(page3.hasNext()).toBe(false)
      const newest = await call(rest, 'GET', `${roomUrl}/messages`, undefined, { limit: '1', orderBy: 'newestFirst' })
      expect(newest.items.map((m: any) => m.text)).toEqual(['n3'])
    })

    test('PUT update replaces the message; POST .../delete soft-deletes', async () => {
      const rest = client(binary, 'amy')
      const sent = await one(rest, 'POST', `${roomUrl}/messages`, {
        text: 'draft',
        metadata: { gone: true },
        headers: { h: '1' },
      })
      const updated = await one(rest, 'PUT', msgUrl(sent.serial), {
        message: { text: 'final' },
        description: 'fix',
        metadata: { why: 'typo' },
      })
      expect(updated).toMatchObject({
        serial: sent.serial,
        text: 'final',
        metadata: {},
        headers: {},
        action: 'message.update',
      })
      expect(updated.version).toMatchObject({ clientId: 'amy', description: 'fix', metadata: { why: 'typo' } })
      const deleted = await one(rest, 'POST', msgUrl(sent.serial, '/delete'), { description: 'bye' })
      expect(deleted).toMatchObject({ serial: sent.serial, action: 'message.delete', text: '' })
      expect(deleted.version.description).toBe('bye')
      expect(deleted.version.serial > updated.version.serial).toBe(true)
    })

    test('reactions: add {type, name, count}, client-reactions, delete ?type=&name=', async () => {
      const amy = client(binary, 'amy')
      const bob = client(binary, 'bob')
      const m = await one(amy, 'POST', `${roomUrl}/messages`, { text: 'react' })
      const added = await one(amy, 'POST', msgUrl(m.serial, '/reactions'), { type: 'multiple', name: '🎉', count: 3 })
      expect(typeof added.serial).toBe('string')
      await one(bob, 'POST', msgUrl(m.serial, '/reactions'), { type: 'distinct', name: '👍' })
      await one(amy, 'POST', msgUrl(m.serial, '/reactions'), { type: 'unique', name: '❤️' })
      const mine = await one(bob, 'GET', msgUrl(m.serial, '/client-reactions'), undefined, { forClientId: 'bob' })
      // only the names bob contributed to, with their room-wide totals and only bob listed
      expect(mine).toEqual({
        unique: {},
        distinct: { '👍': { total: 1, clientIds: ['bob'], clipped: false } },
        multiple: {},
      })
      await one(bob, 'POST', msgUrl(m.serial, '/reactions'), { type: 'multiple', name: '🎉', count: 2 })
      const both = await one(amy, 'GET', msgUrl(m.serial, '/client-reactions'), undefined, { forClientId: 'bob' })
      expect(both.multiple['🎉']).toEqual({
        total: 5,
        clientIds: { bob: 2 },
        totalUnidentified: 0,
        clipped: false,
        totalClientIds: 2,
      })
      await one(bob, 'DELETE', msgUrl(m.serial, '/reactions'), undefined, { type: 'multiple', name: '🎉' })
      await one(amy, 'DELETE', msgUrl(m.serial, '/reactions'), undefined, { type: 'unique' })
      await one(amy, 'DELETE', msgUrl(m.serial, '/reactions'), undefined, { type: 'multiple', name: '🎉' })
      const after = await one(amy, 'GET', msgUrl(m.serial))
      expect(after.reactions).toEqual({
        unique: {},
        distinct: { '👍': { total: 1, clientIds: ['bob'], clipped: false } },
        multiple: {},
      })
    })

    test('occupancy; errors come back as ErrorInfo with the spec codes', async () => {
      const rest = client(binary)
      expect(await one(rest, 'GET', `${roomUrl}/occupancy`)).toEqual({ connections: 0, presenceMembers: 0 })
      await expect(call(rest, 'GET', msgUrl('00000000000001-000000'))).rejects.toMatchObject({
        statusCode: 404,
        code: 40160,
      })
      await expect(call(rest, 'POST', `${roomUrl}/messages`, { text: '' })).rejects.toMatchObject({
        statusCode: 400,
        code: 40001,
      })
      await expect(
        call(client(binary, 'amy'), 'POST', `${roomUrl}/typing`, { clientId: 'bob', isTyping: true }),
      ).rejects.toMatchObject({ statusCode: 400, code: 40012 })
    })
  })
}

test('the v4 paths speak plain HTTP too', async () => {
  const r = await gw.request(`${v4room('plain')}/messages`, {
    method: 'POST',
    json: { text: 'x' },
    headers: { 'x-ably-version': '4' },
  })
  expect(r.status).toBe(201)
  const m = (await r.json()) as any
  await expectError(
    await gw.request(`${v4room('plain')}/messages/${m.serial}`, { method: 'PUT', json: { text: 'not wrapped' } }),
    400,
    40001,
  )
  await expectError(
    await gw.request(`${v4room('plain')}/messages/${m.serial}/reactions`, {
      method: 'POST',
      json: { type: 'sideways', name: 'x' },
    }),
    400,
    40001,
  )
})
