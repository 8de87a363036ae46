/**
 * Rewind, resume and `untilAttach` history of changed messages (a namespace with mutable
 * messages) with the official `ably` client, over msgpack and JSON: a rewind shows each message
 * once in its state as of the attach (an appended one as a `message.update` of the joined data),
 * a resume delivers the changes made meanwhile as they were made, and history until the attach
 * shows the joined data too.
 */
import { describe, expect, test } from 'bun:test'
import * as Ably from 'ably'
import { freshMutable as fresh, mutableNamespace } from '../helpers/mutable'
import { FORMATS, collect, cutSocket, reach, realtimeClient, realtimeGateway } from '../helpers/realtime'

const rt = realtimeGateway()

describe.each(FORMATS)('ably-js over %s', (_format, binary) => {
  const rest = () => rt.rest({ binary })
  const setup = async () => {
    await mutableNamespace(rt.gw)
  }

  /** Publishes `Hel`, appends `lo` and ` world`; answers the serial and the last version serial. */
  async function appended(name: string) {
    const ch = rest().channels.get(name)
    const { serials } = await ch.publish({ name: 'response', data: 'Hel', extras: { headers: { model: 'x' } } })
    const serial = serials[0]!
    await ch.appendMessage({ serial, data: 'lo' } as Ably.Message)
    const last = await ch.appendMessage({ serial, data: ' world' } as Ably.Message, { description: 'tail' })
    return { ch, serial, versionSerial: last.versionSerial! }
  }

  test('a rewind shows an appended message once, as an update of the joined data, in the place of its last append', async () => {
    await setup()
    const name = fresh('rewind-append')
    const { ch, serial, versionSerial } = await appended(name)
    await ch.publish('other', 'after')
    const c = realtimeClient(rt.port, { key: rt.gw.key }, binary)
    const got = await collect(c.channels.get(name, { params: { rewind: '10' } }))
    const ms = await got.until(2)
    await ch.publish('live', 'now')
    await got.until(3)
    expect(got.messages.map((m) => [m.action, m.name, m.data])).toEqual([
      ['message.update', 'response', 'Hello world'],
      ['message.create', 'other', 'after'],
      ['message.create', 'live', 'now'],
    ])
    const m = ms[0]!
    expect(m.serial).toBe(serial)
    expect(m.version!.serial).toBe(versionSerial)
    expect(m.version!.description).toBe('tail')
    expect(m.extras).toEqual({ headers: { model: 'x' } })
  })

  test('a rewind of the last append alone folds from the recorded versions', async () => {
    await setup()
    const name = fresh('rewind-one')
    const { serial, versionSerial } = await appended(name)
    const c = realtimeClient(rt.port, { key: rt.gw.key }, binary)
    const got = await collect(c.channels.get(name, { params: { rewind: '1' } }))
    const [m] = await got.until(1)
    expect([m!.action, m!.data, m!.serial, m!.version!.serial]).toEqual([
      'message.update',
      'Hello world',
      serial,
      versionSerial,
    ])
    // an update after appends: the whole message as the update left it
    await rest()
      .channels.get(name)
      .updateMessage({ serial, data: 'Replaced' } as Ably.Message)
    await rest()
      .channels.get(name)
      .appendMessage({ serial, data: '!' } as Ably.Message)
    const again = await collect(
      realtimeClient(rt.port, { key: rt.gw.key }, binary).channels.get(name, { params: { rewind: '2' } }),
    )
    expect((await again.until(1)).map((x) => [x.action, x.data])).toEqual([['message.update', 'Replaced!']])
  })

  test('history untilAttach shows the joined data; a resume delivers the appends made meanwhile as appends', async () => {
    await setup()
    const name = fresh('resume-append')
    const { ch, serial } = await appended(name)
    const c = realtimeClient(rt.port, { key: rt.gw.key }, binary)
    const channel = c.channels.get(name)
    const got = await collect(channel)
    const page = await channel.history({ untilAttach: true })
    expect(page.items.map((m) => [m.action, m.data])).toEqual([['message.update', 'Hello world']])
    // the transport drops; appends made before the client resumes come as they were made
    await reach(c.connection, 'connected')
    const disconnected = reach(c.connection, 'disconnected')
    cutSocket(rt.gw, c.connection.id!)
    await disconnected
    await ch.appendMessage({ serial, data: '!' } as Ably.Message)
    await reach(c.connection, 'connected')
    await ch.publish('live', 'now')
    await got.until(2)
    expect(got.messages.map((m) => [m.action, m.data])).toEqual([
      ['message.append', '!'],
      ['message.create', 'now'],
    ])
  })
})
