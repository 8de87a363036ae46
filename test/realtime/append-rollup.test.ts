/**
 * AI Transport append semantics with the official `ably` client, over WebSocket (msgpack, JSON)
 * and comet: appends to one message inside the subscriber's rollup window (the
 * `appendRollupWindow` transport param, 40 ms by default) reach it as one append of the joined
 * data, a window of 0 sends each append, and the final text is exact; a subscriber that attaches
 * while a message is being streamed gets the data so far as one `message.update`, then the
 * appends as usual. On Redis, the subscriber is on a second node as well.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { freshMutable as fresh, mutableNamespace } from '../helpers/mutable'
import { collect, reach, realtimeClient, realtimeGateway, secondNode, type Collected } from '../helpers/realtime'
import { waitFor } from '../helpers/wait'

const rt = realtimeGateway()
const other = secondNode(rt)
beforeAll(() => mutableNamespace(rt.gw))

const TRANSPORTS = [
  ['WebSocket msgpack', { binary: true, transports: undefined }],
  ['WebSocket JSON', { binary: false, transports: undefined }],
  ['comet', { binary: false, transports: ['comet'] }],
] as const

/** 61 fragments: the text they make is `Hello` and 60 tokens. */
const TOKENS = Array.from({ length: 60 }, (_, i) => ` t${i}`)

/** What a subscriber made of the message: its text (creates and updates set it, appends add to it) and its deliveries. */
function textOf(got: Collected, serial: string) {
  let text = ''
  const actions: string[] = []
  for (const m of got.messages) {
    if (m.serial !== serial) continue
    actions.push(m.action!)
    text = m.action === 'message.append' ? text + m.data : m.data
  }
  return { text, actions, appends: actions.filter((a) => a === 'message.append').length }
}

describe.each(TRANSPORTS)('appends over %s', (_name, t) => {
  const client = async (port: number, params?: Record<string, string>) => {
    const c = realtimeClient(
      port,
      {
        key: rt.gw.key,
        ...(t.transports ? { transports: [...t.transports] } : {}),
        ...(params ? { transportParams: params } : {}),
      },
      t.binary,
    )
    await reach(c.connection, 'connected')
    return c
  }

  /** A stream: `Hello`, then every token appended at once (pipelined by one realtime publisher); the serial and how long the appends took to be acknowledged. */
  async function stream(channel: Ably.RealtimeChannel, tokens = TOKENS) {
    const { serials } = await channel.publish({ name: 'response', data: 'Hello' })
    const serial = serials[0]!
    const started = performance.now()
    await Promise.all(tokens.map((data) => channel.appendMessage({ serial, data } as Ably.Message)))
    return { serial, ms: performance.now() - started }
  }

  const nodes = () => (other.port ? [rt.port, other.port] : [rt.port])

  test('appends inside the default window reach a subscriber joined: the first at once, then one per window', async () => {
    for (const port of nodes()) {
      const name = fresh('rollup')
      const sub = (await client(port)).channels.get(name)
      const got = await collect(sub)
      const { serial, ms } = await stream((await client(rt.port)).channels.get(name))
      const full = 'Hello' + TOKENS.join('')
      await waitFor(
        () => textOf(got, serial).text,
        (x) => x === full,
      )
      const { actions, appends } = textOf(got, serial)
      expect(actions[0]).toBe('message.create')
      // 61 fragments, sent in `ms`: the first append at once, then at most one per 40 ms window (and the last)
      expect(appends).toBeLessThanOrEqual(2 + Math.ceil(ms / 40))
      expect(appends).toBeLessThan(TOKENS.length)
      // a joined append carries the latest append's version
      const last = got.messages[got.messages.length - 1]!
      expect(last.action).toBe('message.append')
      expect(last.version!.serial! > serial).toBe(true)
    }
  })

  test('appendRollupWindow=0 sends each append as it comes; =100 joins more than the default', async () => {
    const name = fresh('rollup-params')
    const each = await collect((await client(rt.port, { appendRollupWindow: '0' })).channels.get(name))
    const slow = await collect((await client(rt.port, { appendRollupWindow: '100' })).channels.get(name))
    const { serial, ms } = await stream((await client(rt.port)).channels.get(name))
    const full = 'Hello' + TOKENS.join('')
    for (const got of [each, slow])
      await waitFor(
        () => textOf(got, serial).text,
        (x) => x === full,
      )
    expect(textOf(each, serial).appends).toBe(TOKENS.length)
    expect(each.messages.filter((m) => m.action === 'message.append').map((m) => m.data)).toEqual(TOKENS)
    expect(textOf(slow, serial).appends).toBeLessThanOrEqual(2 + Math.ceil(ms / 100))
  })

  test('a subscriber that attaches mid-stream gets the data so far as one update, then the appends', async () => {
    for (const port of nodes()) {
      const name = fresh('late')
      const pub = (await client(rt.port)).channels.get(name)
      const { serials } = await pub.publish({ name: 'response', data: 'Hello', extras: { headers: { turn: '1' } } })
      const serial = serials[0]!
      await pub.appendMessage({ serial, data: ',' } as Ably.Message)
      const late = await collect((await client(port)).channels.get(name))
      await pub.appendMessage({ serial, data: ' world' } as Ably.Message)
      const [first] = await late.until(1)
      expect([first!.action, first!.name, first!.data, first!.serial]).toEqual([
        'message.update',
        'response',
        'Hello, world',
        serial,
      ])
      expect(first!.extras).toEqual({ headers: { turn: '1' } })
      await pub.appendMessage({ serial, data: '!' } as Ably.Message)
      await pub.publish('next', 'after')
      await late.until(3)
      expect(late.messages.map((m) => [m.action, m.data])).toEqual([
        ['message.update', 'Hello, world'],
        ['message.append', '!'],
        ['message.create', 'after'],
      ])
    }
  })

  test('a late joiner during a fast stream ends with the whole text, each fragment once', async () => {
    const name = fresh('late-fast')
    const pub = (await client(rt.port)).channels.get(name)
    const { serials } = await pub.publish({ name: 'response', data: 'Hello' })
    const serial = serials[0]!
    const sending = Promise.all(TOKENS.map((data) => pub.appendMessage({ serial, data } as Ably.Message)))
    const late = await collect((await client(rt.port, { appendRollupWindow: '0' })).channels.get(name))
    await sending
    await pub.appendMessage({ serial, data: '.' } as Ably.Message)
    const full = 'Hello' + TOKENS.join('') + '.'
    await waitFor(
      () => textOf(late, serial).text,
      (x) => x === full,
    )
    expect(late.messages[0]!.action).not.toBe('message.append')
  })
})
