import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { expectError, json, keyWith, room, send, v4room } from './chat-fixture'

let gw: TestGateway
beforeAll(async () => {
  gw = await createTestGateway()
  for (const name of ['r-c', 'r-a', 'team:1', 'r-b', 'team:2']) await send(gw, name, { text: 'hi' })
  await json(
    await gw.request(`${room('r-typing-only')}/typing`, { method: 'POST', json: { clientId: 'x', isTyping: true } }),
  )
})
afterAll(async () => {
  await gw.close()
})

describe('GET /chat/rooms', () => {
  test('lists the active rooms of the app, sorted, with roomId, name and metadata', async () => {
    const rooms = await json(await gw.request('/chat/rooms'))
    expect(rooms.map((r: any) => r.roomId)).toEqual(['r-a', 'r-b', 'r-c', 'r-typing-only', 'team:1', 'team:2'])
    expect(rooms[0]).toEqual({ roomId: 'r-a', name: 'r-a', metadata: {} })
  })

  test('is paginated with links', async () => {
    const r1 = await gw.request('/chat/rooms?limit=4')
    expect((await json(r1)).map((r: any) => r.roomId)).toEqual(['r-a', 'r-b', 'r-c', 'r-typing-only'])
    const next = /<\.\/(rooms\?[^>]+)>; rel="next"/.exec(r1.headers.get('link') ?? '')![1]!
    const r2 = await gw.request(`/chat/${next}`)
    expect((await json(r2)).map((r: any) => r.roomId)).toEqual(['team:1', 'team:2'])
    expect(r2.headers.get('link')).not.toContain('rel="next"')
    await expectError(await gw.request('/chat/rooms?limit=1001'), 400, 40003)
  })

  test('shows only the rooms the credentials may see (channel-metadata)', async () => {
    const key = await keyWith(gw, 'teams', { 'team:*': ['channel-metadata'] })
    expect((await json(await gw.request('/chat/rooms', { key }))).map((r: any) => r.roomId)).toEqual([
      'team:1',
      'team:2',
    ])
    expect((await json(await gw.request('/chat/v4/rooms?limit=1', { key }))).map((r: any) => r.roomId)).toEqual([
      'team:1',
    ])
  })

  test('needs credentials', async () => {
    await expectError(await gw.request('/chat/rooms', { key: null }), 401, 40101)
  })
})

describe('GET /chat/rooms/{room_id}', () => {
  test('an active room', async () => {
    expect(await json(await gw.request(room('team:1')))).toEqual({ roomId: 'team:1', name: 'team:1', metadata: {} })
    expect(await json(await gw.request(v4room('r-a')))).toEqual({ roomId: 'r-a', name: 'r-a', metadata: {} })
  })

  test('a missing room is 404 / 40160 in the error shape', async () => {
    await expectError(await gw.request(room('no-such-room')), 404, 40160)
  })

  test('room ids are URL-decoded and validated', async () => {
    await send(gw, 'with space/and slash', { text: 'x' })
    expect((await json(await gw.request(room('with space/and slash')))).roomId).toBe('with space/and slash')
    await expectError(await gw.request(room('bad::$id')), 400, 40010)
  })

  test('needs channel-metadata on the room', async () => {
    const key = await keyWith(gw, 'nometa', { '*': ['publish', 'history'] })
    await expectError(await gw.request(room('r-a'), { key }), 403, 40160)
  })
})
