/**
 * Filtered channels (`channels.getDerived(name, { filter })`, on the wire `[filter=<base64>]name`)
 * with the official `ably` client, msgpack and JSON, on the backend TEST_BACKEND names: a filtered
 * subscription receives exactly the messages its expression accepts (over `name`, `headers` and
 * `extras`), live, on rewind and on resume after a dropped transport; the channel itself, attached
 * on the same connection, receives everything; one expression under two names is shared and each
 * name gets its own frames; a malformed filter fails that attach with 40010 and leaves the
 * connection up.
 */
import { describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { collect, connectedClient, cutSocket, FORMATS, fresh, reach, realtimeGateway } from '../helpers/realtime'

const rt = realtimeGateway()

/** Messages some filters accept and others refuse; `marker` passes every filter of these tests. */
const MESSAGES: Ably.Message[] = [
  { name: 'ice-cream', data: 'strawberry-35', extras: { headers: { flavor: 'strawberry', cost: 35 } } },
  { name: 'ice-cream', data: 'vanilla-20', extras: { headers: { flavor: 'vanilla', cost: 20 } } },
  { name: 'cake', data: 'cake-strawberry', extras: { headers: { flavor: 'strawberry', cost: 50 } } },
  { name: 'ice-cream', data: 'no-headers' },
  { name: 'ice-cream', data: 'cost-text', extras: { headers: { flavor: 'mint', cost: '99' } } },
]
const MARKER: Ably.Message = { name: 'marker', data: 'marker', extras: { headers: { marker: true } } }

const CASES: Array<[string, string[]]> = [
  ['name == `"ice-cream"` && headers.cost > `30`', ['strawberry-35']],
  ["headers.flavor == 'strawberry' && !(name == 'cake')", ['strawberry-35']],
  ['name == `"cake"` || headers.cost < `25`', ['vanilla-20', 'cake-strawberry']],
  ['extras.headers.flavor != `"vanilla"` && headers.flavor', ['strawberry-35', 'cake-strawberry', 'cost-text']],
  ['headers.cost >= `50` || !headers', ['cake-strawberry', 'no-headers']],
]
const withMarker = (f: string) => `(${f}) || headers.marker == \`true\``

describe.each(FORMATS)('filtered channels over %s', (_format, binary) => {
  const publishAll = async (name: string, messages = MESSAGES) => {
    const ch = rt.rest({ binary }).channels.get(name)
    for (const m of messages) await ch.publish(m)
  }

  test.each(CASES)('%s: exactly the matching messages, live', async (filter, expected) => {
    const name = fresh('filtered')
    const c = await connectedClient(rt.port, { key: rt.gw.key }, binary)
    const got = await collect(c.channels.getDerived(name, { filter: withMarker(filter) }))
    const all = await collect(c.channels.get(name))
    await publishAll(name, [...MESSAGES, MARKER])
    await got.until(expected.length + 1)
    await all.until(MESSAGES.length + 1)
    expect(got.messages.map((m) => m.data)).toEqual([...expected, 'marker'])
    expect(all.messages.map((m) => m.data)).toEqual([...MESSAGES, MARKER].map((m) => m.data))
  })

  test('rewind and resume replay only the matching messages', async () => {
    const name = fresh('filtered-replay')
    const filter = withMarker('name == `"ice-cream"` && headers.cost > `30`')
    await publishAll(name)
    const c = await connectedClient(rt.port, { key: rt.gw.key }, binary)
    const ch = c.channels.getDerived(name, { filter }, { params: { rewind: '10' } })
    const got = await collect(ch)
    await rt.rest({ binary }).channels.get(name).publish(MARKER)
    await got.until(2)
    expect(got.messages.map((m) => m.data)).toEqual(['strawberry-35', 'marker'])
    // the transport drops; what is published meanwhile comes on resume, filtered
    const disconnected = reach(c.connection, 'disconnected')
    cutSocket(rt.gw, c.connection.id!)
    await disconnected
    await publishAll(name, [...MESSAGES, MARKER])
    await reach(c.connection, 'connected')
    await got.until(4)
    expect(got.messages.map((m) => m.data)).toEqual(['strawberry-35', 'marker', 'strawberry-35', 'marker'])
    expect(ch.state).toBe('attached')
  })

  test('channel params in the qualifier ([?rewind=N]name) apply to the filtered channel', async () => {
    const name = fresh('filtered-qualifier')
    await publishAll(name)
    const c = await connectedClient(rt.port, { key: rt.gw.key }, binary)
    const got = await collect(
      c.channels.getDerived(`[?rewind=10]${name}`, { filter: "headers.flavor == 'strawberry'" }),
    )
    await got.until(2)
    await rt
      .rest({ binary })
      .channels.get(name)
      .publish({ name: 'x', data: 'live', extras: { headers: { flavor: 'strawberry' } } })
    await got.until(3)
    expect(got.messages.map((m) => m.data)).toEqual(['strawberry-35', 'cake-strawberry', 'live'])
  })

  test('a malformed or unbounded filter fails the attach with 40010; the connection stays up', async () => {
    const c = await connectedClient(rt.port, { key: rt.gw.key }, binary)
    const name = fresh('filtered-bad')
    for (const filter of ['name ==', 'name == `{bad`', 'headers.a > ', `${'!'.repeat(100)}name`, 'a'.repeat(2000)]) {
      const err = await c.channels
        .getDerived(name, { filter })
        .attach()
        .then(
          () => undefined,
          (e: Ably.ErrorInfo) => e,
        )
      expect(err?.code).toBe(40010)
      expect(err?.statusCode).toBe(400)
    }
    expect(c.connection.state).toBe('connected')
    const ok = await collect(c.channels.getDerived(name, { filter: 'name == `"n"`' }))
    await rt.rest({ binary }).channels.get(name).publish('n', 'fine')
    expect((await ok.until(1)).map((m) => m.data)).toEqual(['fine'])
  })

  test('a filtered channel detaches and attaches again; publishing goes to the channel, not the filtered name', async () => {
    const c = await connectedClient(rt.port, { key: rt.gw.key }, binary)
    const name = fresh('filtered-detach')
    const derived = c.channels.getDerived(name, { filter: "name == 'keep'" })
    const got = await collect(derived)
    await derived.detach()
    await rt.rest({ binary }).channels.get(name).publish('keep', 'while-detached')
    await derived.attach()
    const refused = await derived.publish('keep', 'x').then(
      () => undefined,
      (e: Ably.ErrorInfo) => e.code,
    )
    expect(refused).toBe(40010)
    await c.channels.get(name).publish('drop', 'dropped')
    await c.channels.get(name).publish('keep', 'kept')
    await got.until(1)
    expect(got.messages.map((m) => m.data)).toEqual(['kept'])
    expect(c.connection.state).toBe('connected')
  })

  test('one expression under two names (one with qualifier params) and the channel itself: each gets its own frames', async () => {
    // the filter runs once per batch for both names, and a batch it passes whole is the channel's
    // own: every name still gets frames naming it
    const name = fresh('filtered-shared')
    const c = await connectedClient(rt.port, { key: rt.gw.key }, binary)
    const filter = "headers.flavor == 'mint'"
    const plain = await collect(c.channels.getDerived(name, { filter }))
    const qualified = await collect(c.channels.getDerived(`[?rewind=0]${name}`, { filter }))
    const all = await collect(c.channels.get(name))
    const ch = rt.rest({ binary }).channels.get(name)
    await ch.publish({ name: 'a', data: 'mint-1', extras: { headers: { flavor: 'mint' } } })
    await ch.publish({ name: 'b', data: 'vanilla', extras: { headers: { flavor: 'vanilla' } } })
    await ch.publish({ name: 'c', data: 'mint-2', extras: { headers: { flavor: 'mint' } } })
    await all.until(3)
    await plain.until(2)
    await qualified.until(2)
    expect(all.messages.map((m) => m.data)).toEqual(['mint-1', 'vanilla', 'mint-2'])
    expect(plain.messages.map((m) => m.data)).toEqual(['mint-1', 'mint-2'])
    expect(qualified.messages.map((m) => m.data)).toEqual(['mint-1', 'mint-2'])
  })
})
