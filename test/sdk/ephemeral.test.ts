/**
 * Ephemeral messages (`extras.ephemeral: true`) with the official `ably` client, msgpack and
 * JSON: delivered live (the publisher's own echo included), never in history, rewind or a
 * resumed connection's replay; the channel's continuity holds across them.
 */
import { describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import {
  collect,
  connectedClient,
  cutSocket,
  FORMATS,
  fresh,
  reach,
  realtimeClient,
  realtimeGateway,
} from '../helpers/realtime'

const rt = realtimeGateway()

const ephemeral = (name: string, data: string) => ({ name, data, extras: { ephemeral: true } }) as Ably.Message

describe.each(FORMATS)('ephemeral messages over %s', (_format, binary) => {
  const client = (opts: Ably.ClientOptions = {}) => connectedClient(rt.port, { key: rt.gw.key, ...opts }, binary)

  test('delivered live to every subscriber, absent from history and rewind', async () => {
    const name = fresh('eph')
    const sub = await collect((await client()).channels.get(name))
    const pub = (await client({ clientId: 'p' })).channels.get(name)
    const own = await collect(pub)
    await pub.publish('s', 'stored-1')
    await pub.publish(ephemeral('e', 'live-only'))
    await pub.publish('s', 'stored-2')
    for (const c of [sub, own]) {
      const got = await c.until(3)
      expect(got.map((m) => m.data)).toEqual(['stored-1', 'live-only', 'stored-2'])
      expect(got[1]!.extras).toEqual({ ephemeral: true })
      expect(got[1]!.clientId).toBe('p')
    }
    const history = await rt.rest({ binary }).channels.get(name).history({ direction: 'forwards' })
    expect(history.items.map((m) => m.data)).toEqual(['stored-1', 'stored-2'])
    const rewound = await collect((await client()).channels.get(name, { params: { rewind: '10' } }))
    expect((await rewound.until(2)).map((m) => m.data)).toEqual(['stored-1', 'stored-2'])
    await Bun.sleep(100)
    expect(rewound.messages.length).toBe(2)
  })

  test('a resumed connection gets the stored messages it missed and none of the ephemeral ones', async () => {
    const name = fresh('eph-resume')
    const first = await client()
    const got = await collect(first.channels.get(name))
    const pub = rt.rest({ binary }).channels.get(name)
    await pub.publish('s', 'stored-0')
    // the last thing it received is ephemeral: the recovery key names that position
    await pub.publish(ephemeral('e', 'before'))
    await got.until(2)
    const recoveryKey = first.connection.createRecoveryKey()!
    const id = first.connection.id!
    // the instance dies without a goodbye; meanwhile stored and ephemeral messages are published
    cutSocket(rt.gw, id)
    first.close()
    await pub.publish('s', 'missed-1')
    await pub.publish(ephemeral('e', 'missed-ephemeral'))
    await pub.publish('s', 'missed-2')
    const second = realtimeClient(rt.port, { key: rt.gw.key, recover: recoveryKey }, binary)
    await reach(second.connection, 'connected')
    expect(second.connection.id).toBe(id)
    const channel = second.channels.get(name)
    const again = await collect(channel)
    expect(channel.errorReason).toBeNull()
    await again.until(2)
    await pub.publish('s', 'after')
    await again.until(3)
    expect(again.messages.map((m) => m.data)).toEqual(['missed-1', 'missed-2', 'after'])
  })
})
