import { describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { collect, fresh, reach, realtimeClient, realtimeGateway } from '../helpers/realtime'

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
})
