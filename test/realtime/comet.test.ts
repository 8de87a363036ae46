import { describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { collect, fresh, reach, realtimeClient, realtimeGateway } from '../helpers/realtime'
import { APP_ID } from '../helpers/gateway'

/**
 * The comet transport (HTTP long polling): the official client with `transports: ['comet']`
 * (JSON only: comet has no binary form) connects, publishes and is ACKed, subscribes, enters
 * presence, resumes when its long poll is cut, and closes, as over a WebSocket.
 */
const rt = realtimeGateway()

async function cometClient(opts: Ably.ClientOptions = {}): Promise<Ably.Realtime> {
  const c = realtimeClient(rt.port, { key: rt.gw.key, transports: ['comet'], ...opts }, false)
  await reach(c.connection, 'connected')
  return c
}

const transportOf = (c: Ably.Realtime) =>
  (
    c.connection as unknown as { connectionManager: { activeProtocol?: { getTransport(): { shortName: string } } } }
  ).connectionManager.activeProtocol?.getTransport().shortName

describe('ably-js Realtime over comet', () => {
  test('connects over comet; the server holds the connection', async () => {
    const c = await cometClient()
    expect(transportOf(c)).toBe('comet')
    const id = c.connection.id!
    expect(rt.gw.server!.realtime.connection(id)?.format).toBe('json')
  })

  test('publish is ACKed; a subscriber over comet and one over WebSocket both receive it, in order', async () => {
    const name = fresh('comet-pubsub')
    const sub = await cometClient()
    const ws = realtimeClient(rt.port, { key: rt.gw.key }, true)
    const a = await collect(sub.channels.get(name))
    const b = await collect(ws.channels.get(name))
    const pub = await cometClient()
    const ch = pub.channels.get(name)
    for (let i = 0; i < 5; i++) await ch.publish('m', `v${i}`)
    for (const got of [a, b]) {
      await got.until(5)
      expect(got.messages.map((m) => m.data)).toEqual(['v0', 'v1', 'v2', 'v3', 'v4'])
    }
  })

  test('presence: enter over comet is seen by another client; leave on close', async () => {
    const name = fresh('comet-presence')
    const member = await cometClient({ clientId: 'ann' })
    await member.channels.get(name).presence.enter('hi')
    const watcher = await cometClient()
    const members = await watcher.channels.get(name).presence.get()
    expect(members.map((m) => [m.clientId, m.data])).toEqual([['ann', 'hi']])
    const left = new Promise<string>((r) =>
      watcher.channels.get(name).presence.subscribe('leave', (m) => r(m.clientId!)),
    )
    member.close()
    expect(await left).toBe('ann')
  })

  test('the long poll cut on the server: the client resumes the same connection and misses nothing', async () => {
    const name = fresh('comet-resume')
    const sub = await cometClient()
    const id = sub.connection.id!
    const got = await collect(sub.channels.get(name))
    const rest = rt.rest()
    await rest.channels.get(name).publish('m', 'before')
    await got.until(1)
    rt.gw.server!.realtime.connection(id)!.terminate()
    await reach(sub.connection, 'disconnected')
    await rest.channels.get(name).publish('m', 'while away')
    await reach(sub.connection, 'connected')
    expect(sub.connection.id).toBe(id)
    await rest.channels.get(name).publish('m', 'after')
    await got.until(3)
    expect(got.messages.map((m) => m.data)).toEqual(['before', 'while away', 'after'])
  })

  test('close: CLOSED, and the server forgets the connection', async () => {
    const c = await cometClient()
    const id = c.connection.id!
    c.close()
    await reach(c.connection, 'closed')
    for (let i = 0; i < 200 && rt.gw.server!.realtime.connection(id); i++) await Bun.sleep(10)
    expect(rt.gw.server!.realtime.connection(id)).toBeUndefined()
  })

  test('an unknown comet connection key is answered DISCONNECTED (the client resumes), never a 500', async () => {
    const r = await fetch(`${rt.base}/comet/nope!x.y.z/recv`)
    expect(r.status).toBe(200)
    const [pm] = (await r.json()) as Array<{ action: number; error: { code: number } }>
    expect(pm!.action).toBe(6)
    expect(pm!.error.code).toBe(80003)
  })

  describe('raw requests', () => {
    /** A comet connection opened by hand: its CONNECTED and its base path. */
    async function rawConnect() {
      const r = await fetch(`${rt.base}/comet/connect?v=6&key=${encodeURIComponent(rt.gw.key)}`)
      expect(r.status).toBe(200)
      const text = await r.text()
      expect(text.endsWith('\n')).toBe(true) // the streaming reader parses line by line
      const [connected] = JSON.parse(text) as Array<{ action: number; connectionDetails: { connectionKey: string } }>
      expect(connected!.action).toBe(4)
      return { base: `${rt.base}/comet/${connected!.connectionDetails.connectionKey}` }
    }

    test('a refused connect is answered with ERROR in the array (status 401), never an HTTP error page', async () => {
      const r = await fetch(`${rt.base}/comet/connect?v=6&key=${APP_ID}.nope:nope`)
      const [pm] = (await r.json()) as Array<{ action: number; error: { code: number; statusCode: number } }>
      expect(pm!.action).toBe(9)
      // a key name the app does not have: 40400 with status 401, as the hosted service answers
      expect([pm!.error.code, pm!.error.statusCode]).toEqual([40400, 401])
    })

    test('one long poll at a time: a second recv ends the first; a heartbeat id is echoed on the poll', async () => {
      const { base } = await rawConnect()
      const polls = [fetch(`${base}/recv`).then((r) => r.json()), fetch(`${base}/recv`).then((r) => r.json())]
      // whichever reached the server first is ended, empty, by the other
      expect(await Promise.race(polls)).toEqual([])
      const sent = await fetch(`${base}/send`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify([{ action: 0, id: 'ping-1' }]),
      })
      expect(sent.status).toBe(204)
      const answers = (await Promise.all(polls)).map((a) => JSON.stringify(a)).sort()
      expect(answers).toEqual(['[]', JSON.stringify([{ action: 0, id: 'ping-1' }])])
    })

    test('a send body over the bound fails the connection with 40009, unread', async () => {
      const { base } = await rawConnect()
      const big = JSON.stringify([
        { action: 15, channel: 'x', msgSerial: 0, messages: [{ data: 'x'.repeat(1_100_000) }] },
      ])
      const r = await fetch(`${base}/send`, { method: 'POST', body: big })
      expect(r.status).toBe(200)
      const pms = (await r.json()) as Array<{ action: number; error?: { code: number } }>
      expect(pms.at(-1)).toMatchObject({ action: 9, error: { code: 40009 } })
    })

    test('a send that is not an array of protocol messages fails the connection with ERROR 40000 (no 500)', async () => {
      const { base } = await rawConnect()
      for (const body of ['not json', '{"action":0}']) {
        const { base: b } = body === 'not json' ? { base } : await rawConnect()
        const r = await fetch(`${b}/send`, { method: 'POST', body })
        expect(r.status).toBe(200)
        const pms = (await r.json()) as Array<{ action: number; error?: { code: number } }>
        expect(pms.at(-1)).toMatchObject({ action: 9, error: { code: 40000 } })
        // the connection is over: its key names nothing now
        const after = (await (await fetch(`${b}/recv`)).json()) as Array<{ action: number }>
        expect(after[0]!.action).toBe(6)
      }
    })
  })
})
