import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ChatService, DEFAULT_TYPING_TIMEOUT_MS } from '../../src/core/chat/chat-service'
import { systemClock, systemTimers } from '../../src/lib/clock'
import { TestClock, basic, createTestGateway, type TestGateway } from '../helpers/gateway'
import { as, expectError, json, keyWith, room, roomChannel } from './chat-fixture'

let gw: TestGateway
const clock = new TestClock()
beforeAll(async () => {
  gw = await createTestGateway({}, clock)
})
afterAll(async () => {
  await gw.close()
})

const typing = (name: string, body: unknown, init: { headers?: Record<string, string>; key?: string } = {}) =>
  gw.request(`${room(name)}/typing`, { method: 'POST', json: body, ...init })

/** Typing events on the room channel, oldest first: [event name, data]. */
async function events(name: string): Promise<Array<[string, any]>> {
  const items = await json(
    await gw.request(`/channels/${encodeURIComponent(roomChannel(name))}/messages?direction=forwards&limit=1000`),
  )
  return items.filter((m: any) => m.name.startsWith('typing.')).map((m: any) => [m.name, JSON.parse(m.data)])
}

describe('typing indicators', () => {
  test('start and stop emit events carrying the current set of typers', async () => {
    expect(await json(await typing('t1', { clientId: 'amy', isTyping: true }))).toEqual({
      currentlyTyping: ['amy'],
      change: { clientId: 'amy', type: 'typing.started' },
    })
    expect((await json(await typing('t1', { clientId: 'bob', isTyping: true }))).currentlyTyping).toEqual([
      'amy',
      'bob',
    ])
    expect(await json(await typing('t1', { clientId: 'amy', isTyping: false }))).toEqual({
      currentlyTyping: ['bob'],
      change: { clientId: 'amy', type: 'typing.stopped' },
    })
    // stopping when not typing changes nothing and emits nothing
    expect((await json(await typing('t1', { clientId: 'zed', isTyping: false }))).currentlyTyping).toEqual(['bob'])
    expect(await events('t1')).toEqual([
      ['typing.started', { currentlyTyping: ['amy'], change: { clientId: 'amy', type: 'typing.started' } }],
      ['typing.started', { currentlyTyping: ['amy', 'bob'], change: { clientId: 'bob', type: 'typing.started' } }],
      ['typing.stopped', { currentlyTyping: ['bob'], change: { clientId: 'amy', type: 'typing.stopped' } }],
    ])
  })

  test('a typer expires after the timeout unless renewed (clock driven, no sleeping)', async () => {
    const T = DEFAULT_TYPING_TIMEOUT_MS
    await json(await typing('t2', { clientId: 'amy', isTyping: true }))
    clock.advance(T / 2)
    await json(await typing('t2', { clientId: 'bob', isTyping: true }))
    expect(gw.core.chat.typing.watching).toBeGreaterThan(0)
    clock.advance(T / 2 - 1)
    await json(await typing('t2', { clientId: 'bob', isTyping: true })) // renewal, just before amy is due
    await gw.core.chat.typing.sweep() // what the timer does when the earliest typer is due: nobody yet
    expect((await events('t2')).filter(([n]) => n === 'typing.stopped')).toHaveLength(0)
    clock.advance(1)
    await gw.core.chat.typing.sweep()
    expect((await events('t2')).slice(-1)).toEqual([
      ['typing.stopped', { currentlyTyping: ['bob'], change: { clientId: 'amy', type: 'typing.stopped' } }],
    ])
    clock.advance(T - 2)
    await gw.core.chat.typing.sweep()
    expect((await events('t2')).filter(([n]) => n === 'typing.stopped')).toHaveLength(1)
    clock.advance(1)
    await gw.core.chat.typing.sweep()
    expect((await events('t2')).map(([n, d]) => `${n} ${d.change.clientId} [${d.currentlyTyping}]`)).toEqual([
      'typing.started amy [amy]',
      'typing.started bob [amy,bob]',
      'typing.started bob [amy,bob]',
      'typing.stopped amy [bob]',
      'typing.stopped bob []',
    ])
    expect(gw.core.chat.typing.watching).toBe(0)
    expect((await json(await typing('t2', { clientId: 'cat', isTyping: true }))).currentlyTyping).toEqual(['cat'])
  })

  test('an expired typer is also noticed by the next typing request', async () => {
    await json(await typing('t3', { clientId: 'amy', isTyping: true }))
    clock.advance(DEFAULT_TYPING_TIMEOUT_MS + 1)
    expect((await json(await typing('t3', { clientId: 'bob', isTyping: true }))).currentlyTyping).toEqual(['bob'])
    expect((await events('t3')).map(([n, d]) => `${n} ${d.change.clientId}`)).toEqual([
      'typing.started amy',
      'typing.stopped amy',
      'typing.started bob',
    ])
  })

  test('the timer emits the expiry by itself', async () => {
    const real = await createTestGateway()
    const c = real.core
    const chat = new ChatService(
      real.backend.broker,
      real.backend.chat,
      real.backend.presence,
      c.occupancy,
      c.annotations,
      c.messages,
      c.stats,
      c.limits,
      systemClock,
      systemTimers,
      { maxMessageSize: 65536, typingTimeoutMs: 50 },
    )
    try {
      const p = await c.auth.authenticate({ authorization: basic(real.key), secure: () => false })
      await chat.typing.set(p, 't4', { clientId: 'amy', isTyping: true })
      expect(chat.typing.watching).toBe(1)
      for (let i = 0; i < 100 && chat.typing.watching > 0; i++) await Bun.sleep(10)
      // the expiry is published after the timer fired: read until it is there (5 s: only a stall takes that long)
      const history = `/channels/${encodeURIComponent(roomChannel('t4'))}/messages?direction=forwards`
      const names = async () => (await json(await real.request(history))).map((m: any) => m.name)
      let got = await names()
      for (let i = 0; i < 250 && got.length < 2; i++) {
        await Bun.sleep(20)
        got = await names()
      }
      expect(got).toEqual(['typing.started', 'typing.stopped'])
    } finally {
      chat.close()
      await real.close()
    }
  })
})

describe('errors', () => {
  test('clientId: from the credentials; a different one is 400 / 40012; none at all is 400', async () => {
    expect((await json(await typing('t5', { isTyping: true }, { headers: as('amy') }))).change.clientId).toBe('amy')
    await expectError(await typing('t5', { clientId: 'bob', isTyping: true }, { headers: as('amy') }), 400, 40012)
    await expectError(await typing('t5', { isTyping: true }), 400, 40012)
  })

  test('isTyping must be a boolean', async () => {
    await expectError(await typing('t5', { clientId: 'amy' }), 400, 40001)
    await expectError(await typing('t5', { clientId: 'amy', isTyping: 'yes' }), 400, 40001)
  })

  test('typing needs publish', async () => {
    const key = await keyWith(gw, 'ro', { '*': ['subscribe', 'history'] })
    await expectError(await typing('t5', { clientId: 'amy', isTyping: true }, { key }), 403, 40160)
  })
})
