/**
 * Continuity of realtime connections with the official `ably` client (msgpack and JSON): resume
 * after the socket is cut mid-stream (same connectionId, nothing lost, nothing twice), publishes
 * resent after a resume answered once, recover from a new client instance, and failed resumes
 * (80018, a new connectionId).
 */
import { describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { addApp } from '../helpers/gateway'
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
import { rawConnected, type RawClient } from '../helpers/realtime-raw'
import { freshMutable, messagesPath, mutableNamespace } from '../helpers/mutable'
import { newConnectionId } from '../../src/core/auth/connection-keys'

const rt = realtimeGateway()

/** The serials of each msgSerial a raw client was acknowledged, once every msgSerial from `from` below `upTo` is answered (a NACK throws). */
async function answered(raw: RawClient, upTo: number, from = 0): Promise<Map<number, Array<string | null>>> {
  await raw.next((f) => (f.action === 1 || f.action === 2) && f.msgSerial + (f.count ?? 1) >= upTo)
  const serials = new Map<number, Array<string | null>>()
  for (const f of raw.frames) {
    if (f.action === 2) throw new Error(`NACK: ${JSON.stringify(f)}`)
    if (f.action === 1)
      f.res.forEach((r: { serials: Array<string | null> }, i: number) => serials.set(f.msgSerial + i, r.serials))
  }
  for (let s = from; s < upTo; s++) if (!serials.has(s)) throw new Error(`msgSerial ${s} not answered`)
  return serials
}
const history = async (channel: string) =>
  (await rt.rest().channels.get(channel).history({ direction: 'forwards', limit: 1000 })).items

/** Counts the client's transitions to CONNECTED after the first, and the update events of a channel. */
function watch(client: Ably.Realtime, channel?: Ably.RealtimeChannel) {
  const seen = { reconnects: 0, ids: [] as string[], updates: [] as Ably.ChannelStateChange[] }
  client.connection.on('connected', () => {
    seen.reconnects++
    seen.ids.push(client.connection.id!)
  })
  channel?.on('update', (c) => seen.updates.push(c))
  channel?.on('attached', (c) => c.resumed || seen.updates.push(c))
  return seen
}

/** A connection's server side, to intercept what it sends. */
const serverSide = (connectionId: string) =>
  rt.gw.server!.realtime.connection(connectionId) as unknown as { send(pm: object): boolean }

describe.each(FORMATS)('ably-js Realtime over %s', (_format, binary) => {
  const client = (opts: Ably.ClientOptions = {}) => connectedClient(rt.port, { key: rt.gw.key, ...opts }, binary)

  test('socket cut mid-stream: the client resumes the same connection and gets every message once, in order', async () => {
    const name = fresh('resume')
    const sub = await client()
    const ch = sub.channels.get(name)
    const got = await collect(ch)
    const seen = watch(sub, ch)
    const id = sub.connection.id!
    const pub = rt.rest().channels.get(name)
    const sent: string[] = []
    for (let i = 0; i < 60; i++) {
      // cut twice while messages keep coming
      if (i === 20 || i === 40) cutSocket(rt.gw, id)
      await pub.publish('n', `m${i}`)
      sent.push(`m${i}`)
    }
    await got.until(60)
    expect(got.messages.map((m) => m.data)).toEqual(sent)
    expect(seen.reconnects).toBe(2)
    expect(seen.ids).toEqual([id, id])
    expect(sub.connection.id).toBe(id)
    // continuity kept: the channel never reported a discontinuity
    expect(seen.updates).toEqual([])
    await pub.publish('n', 'after')
    await got.until(61)
    expect(got.messages.length).toBe(61)
  })

  test('a publish whose ACK was lost is resent after the resume and answered with its first serials, not published twice', async () => {
    const name = fresh('resend')
    const pub = await client()
    const id = pub.connection.id!
    const ch = pub.channels.get(name)
    await ch.publish('n', 'first')
    // the next ACK never reaches the client: the socket is cut as the server sends it
    const server = serverSide(id)
    const send = server.send.bind(server)
    let cut = false
    server.send = (pm: object) => {
      if (!cut && (pm as { action?: number }).action === 1) {
        cut = true
        cutSocket(rt.gw, id)
        return true
      }
      return send(pm)
    }
    await ch.publish('n', 'lost ack')
    expect(cut).toBe(true)
    expect(pub.connection.id).toBe(id)
    await ch.publish('n', 'next')
    const items = await history(name)
    expect(items.map((m) => m.data)).toEqual(['first', 'lost ack', 'next'])
    expect(items.map((m) => m.id)).toEqual([`${id}:0:0`, `${id}:1:0`, `${id}:2:0`])
  })

  test('a publish still in the broker when the socket is cut, resent after the resume: published once', async () => {
    const name = fresh('slow-broker')
    const pub = await client()
    const id = pub.connection.id!
    const ch = pub.channels.get(name)
    // the broker has the publish, but answers only after the client resumed and resent it (every
    // publish, the realtime transport's included, goes through the publisher's one entry)
    const { publisher } = rt.gw.core
    const publish = publisher.publish.bind(publisher)
    let resent!: () => void
    const resentArrived = new Promise<void>((r) => (resent = r))
    let calls = 0
    publisher.publish = async (...args: Parameters<typeof publish>) => {
      if (args[1] !== name || calls++ > 0) return publish(...args)
      const result = publish(...args)
      pub.connection.once('connected', () => {
        // the resumed connection's first frame is the resent MESSAGE (nothing is attached)
        const conn = rt.gw.server!.realtime.connection(id)!
        const receive = conn.receive.bind(conn)
        conn.receive = (raw) => {
          conn.receive = receive
          receive(raw)
          resent()
        }
      })
      cutSocket(rt.gw, id)
      await resentArrived
      return result
    }
    try {
      await ch.publish('n', 'slow')
    } finally {
      publisher.publish = publish
    }
    const items = await history(name)
    expect(items.map((m) => [m.data, m.id])).toEqual([['slow', `${id}:0:0`]])
    expect(pub.connection.id).toBe(id)
    expect(calls).toBe(1)
  })

  test('publishes in flight while the socket is cut: each published exactly once, every promise settles', async () => {
    const name = fresh('inflight')
    const pub = await client()
    const id = pub.connection.id!
    const ch = pub.channels.get(name)
    const pending: Promise<unknown>[] = []
    for (let i = 0; i < 50; i++) {
      pending.push(ch.publish('n', `m${i}`))
      if (i === 25) cutSocket(rt.gw, id)
    }
    await Promise.all(pending)
    const items = await history(name)
    expect(items.map((m) => m.data)).toEqual(Array.from({ length: 50 }, (_, i) => `m${i}`))
    expect(new Set(items.map((m) => m.id)).size).toBe(50)
    expect(pub.connection.id).toBe(id)
  })

  test('recover: a new client instance continues the connection and its channels from a recovery key', async () => {
    const name = fresh('recover')
    const first = await client()
    const ch = first.channels.get(name)
    const got = await collect(ch)
    await ch.publish('n', 'before')
    await got.until(1)
    const recoveryKey = first.connection.createRecoveryKey()!
    const id = first.connection.id!
    // the first instance dies without a goodbye
    cutSocket(rt.gw, id)
    first.close()
    const pub = rt.rest().channels.get(name)
    await pub.publish('n', 'missed1')
    await pub.publish('n', 'missed2')

    const second = realtimeClient(rt.port, { key: rt.gw.key, recover: recoveryKey }, binary)
    await reach(second.connection, 'connected')
    expect(second.connection.id).toBe(id)
    expect(second.connection.errorReason).toBeNull()
    const again = await collect(second.channels.get(name))
    await again.until(2)
    await pub.publish('n', 'live')
    await again.until(3)
    expect(again.messages.map((m) => m.data)).toEqual(['missed1', 'missed2', 'live'])
    // its msgSerial continues from the recovery key: the next publish gets the next id
    await second.channels.get(name).publish('n', 'mine')
    expect((await history(name)).at(-1)!.id).toBe(`${id}:1:0`)
  })

  test('a resume with a bad connection key: CONNECTED on a new connection with 80018, channels re-attached', async () => {
    const name = fresh('badkey')
    const c = await client()
    const ch = c.channels.get(name)
    const got = await collect(ch)
    const oldId = c.connection.id!
    const seen = watch(c, ch)
    // the client resumes with a key the server never issued
    ;(c.connection as unknown as { connectionManager: { connectionKey: string } }).connectionManager.connectionKey =
      `${oldId}!not-the-mac`
    cutSocket(rt.gw, oldId)
    await new Promise<void>((resolve) => c.connection.once('connected', () => resolve()))
    expect(c.connection.id).not.toBe(oldId)
    expect(c.connection.errorReason?.code).toBe(80018)
    await reach(ch, 'attached')
    await rt.rest().channels.get(name).publish('n', 'on the new connection')
    expect((await got.until(1)).map((m) => m.data)).toEqual(['on the new connection'])
    expect(seen.ids).toEqual([c.connection.id!])
  })
})

/** A full-access API key of an app of its own (its credentials string). */
const keyOfAnotherApp = () => addApp(rt.gw, fresh('app'))

describe('resume on the wire (raw WebSocket)', () => {
  test('a resume key of a connection of another app, or not a key, gives 80018 and a new connectionId', async () => {
    const { raw: first, connected } = await rawConnected(rt.base, { key: rt.gw.key })
    const key = connected.connectionDetails.connectionKey as string
    first.close()
    const other = await keyOfAnotherApp()
    for (const [resume, apiKey] of [
      [key, other], // a real key, of a connection of another app
      [`${connected.connectionId}!AAAAAAAAAAAAAAAAAAAAAA`, rt.gw.key], // a forged mac
      ['garbage', rt.gw.key], // not a key at all
    ] as const) {
      const { raw, connected: again } = await rawConnected(rt.base, { key: apiKey, resume })
      expect(again.error?.code).toBe(80018)
      expect(again.error?.statusCode).toBe(400)
      expect(again.connectionId).not.toBe(connected.connectionId)
      raw.close()
    }
  })

  test('a valid resume key gives the same connectionId and no error', async () => {
    const { raw: first, connected } = await rawConnected(rt.base, { key: rt.gw.key })
    first.close()
    await first.closing()
    const { raw, connected: again } = await rawConnected(rt.base, {
      key: rt.gw.key,
      resume: connected.connectionDetails.connectionKey,
    })
    expect(again.connectionId).toBe(connected.connectionId)
    expect(again.error).toBeUndefined()
    raw.close()
  })

  test('a resumed connection answers a resent msgSerial with its first serials (same node)', async () => {
    const channel = fresh('raw-resend')
    const { raw: first, connected } = await rawConnected(rt.base, { key: rt.gw.key })
    first.send({ action: 15, channel, msgSerial: 0, messages: [{ data: 'once' }] })
    const ack = await first.next((f) => f.action === 1)
    first.ws.close()
    await first.closing()
    const { raw } = await rawConnected(rt.base, { key: rt.gw.key, resume: connected.connectionDetails.connectionKey })
    raw.send({ action: 15, channel, msgSerial: 0, messages: [{ data: 'once' }] })
    const again = await raw.next((f) => f.action === 1)
    expect(again.res).toEqual(ack.res)
    expect((await history(channel)).map((m) => m.data)).toEqual(['once'])
    raw.close()
  })

  test('a PRESENCE and an ANNOTATION resent after a resume are answered with their first serials, never applied twice (RTN19a)', async () => {
    await mutableNamespace(rt.gw) // annotations need the mutableMessages rule
    const channel = freshMutable('raw-resend-ops')
    const { raw: first, connected } = await rawConnected(rt.base, { key: rt.gw.key })
    first.send({ action: 15, channel, msgSerial: 0, messages: [{ data: 'annotated' }] })
    const messageSerial = (await answered(first, 1)).get(0)![0]!
    const operations = [
      { action: 14, channel, msgSerial: 1, presence: [{ action: 2, clientId: 'ann', data: 'here' }] },
      {
        action: 21,
        channel,
        msgSerial: 2,
        annotations: [{ action: 0, type: 'reaction:multiple.v1', name: 'like', messageSerial }],
      },
    ]
    for (const pm of operations) first.send(pm)
    const before = await answered(first, 3)
    first.ws.close()
    await first.closing()
    // as a client whose ACKs were lost with the socket: both sent again, with the same msgSerials
    const { raw } = await rawConnected(rt.base, { key: rt.gw.key, resume: connected.connectionDetails.connectionKey })
    for (const pm of operations) raw.send(pm)
    const again = await answered(raw, 3, 1)
    expect([again.get(1), again.get(2)]).toEqual([before.get(1), before.get(2)])
    const presence = await rt.rest().channels.get(channel).presence.history({ limit: 100 })
    expect(presence.items.map((p) => p.action)).toEqual(['enter'])
    const annotations = await rt.gw.request(messagesPath(channel, `/${messageSerial}/annotations`))
    expect(((await annotations.json()) as unknown[]).length).toBe(1)
    raw.close()
  })

  test('a connection resumed on a node that never saw it: a resend already in the log is answered, not published twice', async () => {
    // what a node that died had appended for connection X before it could answer (X's own key,
    // made as that node made it), and that this node knows nothing of
    const id = newConnectionId()
    const channel = fresh('raw-foreign-resend')
    const principal = await rt.gw.core.auth.authenticate({ key: rt.gw.key, secure: () => false })
    const first = await rt.gw.core.publisher.publish(principal, channel, [{ data: 'stored' }], {
      connectionId: id,
      msgSerial: 7,
    })
    const resume = await rt.gw.core.connectionKeys.issue(id, principal)
    const { raw, connected } = await rawConnected(rt.base, { key: rt.gw.key, resume })
    expect(connected.connectionId).toBe(id)
    raw.send({ action: 15, channel, msgSerial: 7, messages: [{ data: 'stored' }] }) // the client's resend
    raw.send({ action: 15, channel, msgSerial: 8, messages: [{ data: 'new' }] })
    const acks = await raw.next((f) => f.action === 1 && f.msgSerial + f.count === 9)
    const answered = raw.frames
      .filter((f) => f.action === 1)
      .flatMap((f) => f.res.map((r: { serials: string[] }) => r.serials))
    expect(answered[0]).toEqual(first.serials)
    expect(acks).toBeDefined()
    expect((await history(channel)).map((m) => m.data)).toEqual(['stored', 'new'])
    raw.close()
  })
})
