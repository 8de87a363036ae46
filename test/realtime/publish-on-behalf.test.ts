/**
 * A REST publish on behalf of a realtime connection, with the official `ably` clients (msgpack
 * and JSON): a message carrying a connection's private `connectionKey` is published with that
 * connection's `connectionId` (a connection with echo off does not get it back); a key of another
 * app, a forged one, or one of a connection that is over is refused whole with 400 / 40006.
 */
import { describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { collect, connectedClient, FORMATS, fresh, reach, realtimeGateway } from '../helpers/realtime'

const rt = realtimeGateway()

describe.each(FORMATS)('REST publish with a connectionKey over %s', (_format, binary) => {
  const client = (opts: Ably.ClientOptions = {}) => connectedClient(rt.port, { key: rt.gw.key, ...opts }, binary)
  const fail = (p: Promise<unknown>) =>
    p.then(
      () => undefined as unknown as Ably.ErrorInfo,
      (e) => e as Ably.ErrorInfo,
    )

  test("is published with the connection's id; that connection, echo off, does not receive it", async () => {
    const name = fresh('on-behalf')
    const own = await client({ echoMessages: false })
    const mine = await collect(own.channels.get(name))
    const other = await collect((await client()).channels.get(name))
    const rest = rt.rest({ binary }).channels.get(name)
    await rest.publish({ name: 'n', data: 'for the connection', connectionKey: own.connection.key! })
    await rest.publish({ name: 'n', data: 'plain' })
    const got = await other.until(2)
    expect(got.map((m) => [m.data, m.connectionId])).toEqual([
      ['for the connection', own.connection.id],
      ['plain', undefined],
    ])
    // the connection itself skipped its own message (echo off), and took the next one
    expect((await mine.until(1)).map((m) => m.data)).toEqual(['plain'])
    const history = (await rest.history({ direction: 'forwards' })).items
    expect(history[0]).toMatchObject({ data: 'for the connection', connectionId: own.connection.id })
    expect(JSON.stringify(history)).not.toContain(own.connection.key!)
  })

  test('a key of another app, a forged key, or one of a closed connection is refused with 400 / 40006', async () => {
    const name = fresh('on-behalf-refused')
    const rest = rt.rest({ binary }).channels.get(name)
    const c = await client()
    const key = c.connection.key!
    const foreign = await rt.gw.core.connectionKeys.issue(c.connection.id!, {
      appId: 'otherapp',
      keyName: 'otherapp.k',
    })
    const forged = key.slice(0, -3) + (key.endsWith('AAA') ? 'BBB' : 'AAA')
    for (const bad of [foreign, forged, 'not-a-key']) {
      const err = await fail(rest.publish({ name: 'n', data: 'x', connectionKey: bad }))
      expect(err?.code).toBe(40006)
      expect(err?.statusCode).toBe(400)
    }
    const id = c.connection.id!
    c.close()
    await reach(c.connection, 'closed')
    // the record that it closed is written once CLOSED is out: wait for it (shared by every node)
    for (let i = 0; i < 250 && !(await rt.gw.core.endedConnections.ended(id, key)); i++) await Bun.sleep(20)
    const err = await fail(rest.publish({ name: 'n', data: 'x', connectionKey: key }))
    expect(err?.code).toBe(40006)
    expect((await rest.history()).items).toEqual([])
  })
})
