import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { allPages, as, expectError, json, keyWith, room, send, v4room } from './chat-fixture'

let gw: TestGateway
const BIG = 'big'
const N = 1_234
beforeAll(async () => {
  gw = await createTestGateway()
  // more than 1,000 messages, with other room events (typing) between some of them
  for (let i = 0; i < N; i += 20) {
    await Promise.all(Array.from({ length: Math.min(20, N - i) }, (_, j) => send(gw, BIG, { text: `m${i + j}` })))
    if (i % 200 === 0)
      await json(
        await gw.request(`${room(BIG)}/typing`, { method: 'POST', json: { clientId: 'typist', isTyping: true } }),
      )
  }
}, 60_000)
afterAll(async () => {
  await gw.close()
})

describe('paging', () => {
  test('forwards across more than 1,000 messages: every message once, in serial order', async () => {
    const { items, pages } = await allPages(gw, `${room(BIG)}/messages?direction=forwards&limit=100`)
    expect(items).toHaveLength(N)
    expect(pages).toBe(Math.ceil(N / 100))
    const serials = items.map((m) => m.serial)
    expect([...serials].sort()).toEqual(serials)
    expect(new Set(serials).size).toBe(N)
    expect(new Set(items.map((m) => m.text)).size).toBe(N)
    expect(items.every((m) => m.action === 'message.create' && m.roomId === BIG)).toBe(true)
  }, 60_000)

  test('backwards (the default) is the exact reverse, in pages of up to 1000', async () => {
    const fwd = (await allPages(gw, `${room(BIG)}/messages?direction=forwards&limit=1000`)).items.map((m) => m.serial)
    const { items, pages } = await allPages(gw, `${room(BIG)}/messages?limit=1000`)
    expect(pages).toBe(2)
    expect(items.map((m) => m.serial)).toEqual([...fwd].reverse())
  }, 60_000)

  test('default page is 100, newest first, with first / current / next links', async () => {
    const r = await gw.request(`${room(BIG)}/messages`)
    const page = await json(r)
    expect(page).toHaveLength(100)
    expect(page[0].serial > page[99].serial).toBe(true)
    const link = r.headers.get('link') ?? ''
    expect(link).toContain('rel="first"')
    expect(link).toContain('rel="current"')
    expect(link).toMatch(/<\.\/messages\?[^>]*cursor=[^>]+>; rel="next"/)
  })

  test('the last page has no next link', async () => {
    const r = await gw.request(
      `${room(BIG)}/messages?limit=1000&direction=forwards&cursor=${encodeURIComponent('99999999999999-000000')}`,
    )
    expect(await json(r)).toEqual([])
    expect(r.headers.get('link')).not.toContain('rel="next"')
  })
})

describe('query parameters', () => {
  test('start and end bound the creation time (inclusive)', async () => {
    const a = await send(gw, 'h1', { text: 'a' })
    await Bun.sleep(3)
    const b = await send(gw, 'h1', { text: 'b' })
    await Bun.sleep(3)
    const c = await send(gw, 'h1', { text: 'c' })
    const texts = async (qs: string) =>
      (await json(await gw.request(`${room('h1')}/messages?direction=forwards&${qs}`))).map((m: any) => m.text)
    expect(await texts(`start=${b.timestamp}`)).toEqual(['b', 'c'])
    expect(await texts(`end=${b.timestamp}`)).toEqual(['a', 'b'])
    expect(await texts(`start=${b.timestamp}&end=${b.timestamp}`)).toEqual(['b'])
    expect(await texts(`start=${c.timestamp + 1}`)).toEqual([])
    expect(a.timestamp).toBeLessThan(b.timestamp)
  })

  test.each([
    ['limit over 1000', 'limit=1001'],
    ['limit zero', 'limit=0'],
    ['limit not a number', 'limit=ten'],
    ['bad direction', 'direction=sideways'],
    ['bad start', 'start=yesterday'],
    ['start after end', 'start=20&end=10'],
  ])('%s is 400 / 40003', async (_why, qs) => {
    await expectError(await gw.request(`${room(BIG)}/messages?${qs}`), 400, 40003)
  })

  test('limit 1000 is allowed', async () => {
    expect(await json(await gw.request(`${room(BIG)}/messages?limit=1000`))).toHaveLength(1000)
  })
})

describe('rooms and rights', () => {
  test('a room never used is 404 / 40160 here, and an empty list on the hosted path', async () => {
    await expectError(await gw.request(`${room('never-used')}/messages`), 404, 40160)
    expect(await json(await gw.request(`${v4room('never-used')}/messages`))).toEqual([])
  })

  test('history needs the history capability', async () => {
    const key = await keyWith(gw, 'pubonly', { '*': ['publish'] })
    await expectError(await gw.request(`${room(BIG)}/messages`, { key }), 403, 40160)
    const reader = await keyWith(gw, 'histonly', { [BIG]: ['history'] })
    expect((await gw.request(`${room(BIG)}/messages?limit=1`, { key: reader })).status).toBe(200)
  })

  test('typing and reaction events of the room channel are not messages', async () => {
    const m = await send(gw, 'h2', { text: 'only' }, { headers: as('a') })
    await json(await gw.request(`${room('h2')}/typing`, { method: 'POST', json: { clientId: 'a', isTyping: true } }))
    await json(
      await gw.request(`${room('h2')}/messages/${m.serial}/reactions`, {
        method: 'POST',
        json: { type: 'like', clientId: 'a' },
      }),
      201,
    )
    await json(await gw.request(`${room('h2')}/messages/${m.serial}`, { method: 'PATCH', json: { text: 'edited' } }))
    const items = await json(await gw.request(`${room('h2')}/messages`))
    expect(items).toHaveLength(1)
    expect(items[0]).toMatchObject({
      serial: m.serial,
      text: 'edited',
      reactions: { distinct: { like: { total: 1, clientIds: ['a'] } } },
    })
  })
})
