/**
 * `first()` and `current()` of the official client on pages fetched with default parameters:
 * the client drops a `Link` whose query is empty, so every paginated route must write one it
 * keeps (msgpack and JSON, on both backends).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import * as Ably from 'ably'
import { createTestGateway, listen, type TestGateway } from '../helpers/gateway'

let gw: TestGateway
let port: number
beforeAll(async () => {
  gw = await createTestGateway()
  port = Number(new URL(listen(gw)).port)
})
afterAll(() => gw.close())

const name = (p: string) => `${p}-${Math.random().toString(36).slice(2, 8)}`

type Page = Pick<Ably.PaginatedResult<unknown>, 'items' | 'first' | 'current'>

/** first() and current() of `page` give its items again. */
async function followsBack(page: Page): Promise<void> {
  expect(page.items.length).toBeGreaterThan(0)
  const again = [await page.first(), await page.current()]
  for (const p of again) expect(JSON.stringify(p.items)).toBe(JSON.stringify(page.items))
}

describe.each([
  ['msgpack', true],
  ['json', false],
] as const)('default-parameter pages over %s', (_f, useBinaryProtocol) => {
  const rest = () =>
    new Ably.Rest({ key: gw.key, endpoint: '127.0.0.1', port, tls: false, useBinaryProtocol, logLevel: 0 })

  test('channel history', async () => {
    const ch = rest().channels.get(name('hist'))
    await ch.publish('n', 'one')
    await followsBack(await ch.history())
  })

  test('presence members and presence history', async () => {
    const channel = name('pres')
    const member = new Ably.Realtime({
      key: gw.key,
      clientId: 'alice',
      endpoint: '127.0.0.1',
      port,
      tls: false,
      logLevel: 0,
    })
    try {
      await member.channels.get(channel).presence.enter('here')
      await followsBack(await rest().channels.get(channel).presence.get())
      await followsBack(await rest().channels.get(channel).presence.history())
    } finally {
      member.close()
    }
  })

  test('stats', async () => {
    const r = rest()
    await r.channels.get(name('stats')).publish('n', 'counted')
    gw.core.stats.flush()
    const page = await r.stats()
    expect(page.items.length).toBeGreaterThan(0)
    const intervals = (p: Ably.PaginatedResult<Ably.Stats>) => p.items.map((s) => s.intervalId)
    expect(intervals(await page.first())).toEqual(intervals(page))
    expect(intervals(await page.current())).toEqual(intervals(page))
  })

  test('channel enumeration and chat history (HttpPaginatedResponse)', async () => {
    const r = rest()
    const room = name('room')
    await r.channels.get(name('enum')).publish('n', 'x')
    await followsBack(await r.request('get', '/channels', 3, {}, undefined))
    const sent = await r.request('post', `/chat/v4/rooms/${room}/messages`, 3, {}, { text: 'hello' })
    expect(sent.statusCode).toBe(201)
    await followsBack(await r.request('get', `/chat/v4/rooms/${room}/messages`, 3, {}, undefined))
  })
})
