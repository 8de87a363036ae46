/**
 * Bounds of a node's realtime side with the official client: the connection limit (a client
 * beyond it is told DISCONNECTED 503 and gets in once there is room) and the unsent bytes a
 * socket may hold (beyond them its subscriptions pause and catch up from the channel log, so a
 * burst larger than the buffer arrives complete, in order, once each).
 */
import { expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { randomBytes } from 'node:crypto'
import { connect, type Socket } from 'node:net'
import { parseExposition } from '../helpers/prometheus'
import { collect, connectedClient, fresh, realtimeClient, realtimeGateway } from '../helpers/realtime'

// one publish may carry a burst of megabytes here
const rt = realtimeGateway({
  realtimeMaxConnections: 2,
  realtimeBufferBytes: 4096,
  maxMessageSize: 8 * 1024 * 1024,
  maxBodySize: 16 * 1024 * 1024,
  // a channel's LiveObjects of 20 MB (the sync test below)
  liveObjectsMaxChannelBytes: 64 * 1024 * 1024,
})

test('beyond REALTIME_MAX_CONNECTIONS: DISCONNECTED 503, and the client connects once a place is free', async () => {
  const first = await connectedClient(rt.port, { key: rt.gw.key })
  await connectedClient(rt.port, { key: rt.gw.key })
  const third = realtimeClient(rt.port, { key: rt.gw.key, disconnectedRetryTimeout: 200 })
  const refused = await new Promise<Ably.ErrorInfo | undefined>((resolve) =>
    third.connection.once('disconnected', (c) => resolve(c.reason)),
  )
  expect([refused?.code, refused?.statusCode]).toEqual([50003, 503])
  expect(rt.gw.server!.realtime.size).toBe(2)
  first.close()
  await new Promise<void>((resolve) => third.connection.once('connected', () => resolve()))
  expect(rt.gw.server!.realtime.size).toBe(2)
})

test('a burst far beyond REALTIME_BUFFER_BYTES: paused, caught up from the log, complete and in order', async () => {
  const name = fresh('burst')
  const sub = await connectedClient(rt.port, { key: rt.gw.key }, false)
  const got = await collect(sub.channels.get(name))
  const payload = 'x'.repeat(20_000)
  // one REST batch of 200 messages of 20 KB: one delivery of 4 MB for a socket allowed 4 KB unsent; what follows
  // is published while the subscription is paused, and read from the log when the socket drains
  const body = Array.from({ length: 200 }, (_, i) => ({ name: `m${i}`, data: payload }))
  const r = await rt.gw.request(`/channels/${name}/messages`, { method: 'POST', json: body })
  expect(r.status).toBe(201)
  for (let i = 0; i < 5; i++) await rt.rest().channels.get(name).publish('after', `a${i}`)
  await got.until(205, 15_000)
  expect(got.messages.map((m) => m.name)).toEqual([
    ...Array.from({ length: 200 }, (_, i) => `m${i}`),
    ...Array.from({ length: 5 }, () => 'after'),
  ])
  expect(new Set(got.messages.map((m) => m.id)).size).toBe(205)
  expect(sub.connection.state).toBe('connected')
})

test('a socket far behind (over the runtime backpressure limit): nothing is dropped silently, another channel loses nothing', async () => {
  const [big, small] = [fresh('big'), fresh('small')]
  const sub = await connectedClient(rt.port, { key: rt.gw.key })
  const bulk = await collect(sub.channels.get(big))
  const other = await collect(sub.channels.get(small))
  // 6 MB in one delivery: the socket holds megabytes unsent, beyond the runtime's own limit
  const body = Array.from({ length: 6 }, (_, i) => ({ name: `b${i}`, data: 'y'.repeat(1024 * 1024) }))
  const r = await rt.gw.request(`/channels/${big}/messages`, { method: 'POST', json: body })
  expect(r.status).toBe(201)
  // meanwhile another channel of the same connection gets a message
  await rt.rest().channels.get(small).publish('n', 'must arrive')
  expect((await other.until(1, 15_000)).map((m) => m.data)).toEqual(['must arrive'])
  expect((await bulk.until(6, 15_000)).map((m) => m.name)).toEqual(['b0', 'b1', 'b2', 'b3', 'b4', 'b5'])
}, 30_000)

/**
 * A WebSocket client that never reads (raw TCP: the handshake, then masked text frames): the
 * server's answers pile up in its socket.
 */
async function nonReadingClient(query: string): Promise<{ socket: Socket; send(text: string): void }> {
  const socket = connect(rt.port, '127.0.0.1')
  await new Promise((resolve) => socket.once('connect', resolve))
  socket.write(
    `GET /?${query} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
      `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
  )
  await new Promise((resolve) => socket.once('data', resolve)) // the 101 (and maybe CONNECTED)
  socket.pause()
  socket.on('error', () => undefined) // the server cuts it: later writes fail
  const send = (text: string) => {
    if (socket.destroyed) return
    const payload = Buffer.from(text)
    const mask = randomBytes(4)
    const head =
      payload.length < 126
        ? Buffer.from([0x81, 0x80 | payload.length])
        : Buffer.from([0x81, 0x80 | 126, payload.length >> 8, payload.length & 255])
    for (let i = 0; i < payload.length; i++) payload[i]! ^= mask[i % 4]!
    socket.write(Buffer.concat([head, mask, payload]))
  }
  return { socket, send }
}

/** The count of realtime slow-consumer cuts in this node's /metrics. */
async function cuts(): Promise<number> {
  const family = parseExposition(await (await fetch(`${rt.base}/metrics`)).text()).get(
    'gateway_realtime_slow_consumers_cut_total',
  )
  if (!family) throw new Error('no gateway_realtime_slow_consumers_cut_total in /metrics')
  return family.samples[0]?.value ?? 0
}

test('a client that asks without reading: cut once its unread answers pass their bound (its socket stays bounded), and counted', async () => {
  const size = () => rt.gw.server!.realtime.size
  const cutBefore = await cuts()
  for (let i = 0; i < 200 && size() > 0; i++) await Bun.sleep(10) // the other tests' clients are gone
  const { socket, send } = await nonReadingClient(`key=${encodeURIComponent(rt.gw.key)}&format=json`)
  for (let i = 0; i < 200 && size() === 0; i++) await Bun.sleep(10)
  expect(size()).toBe(1)
  // pings whose echoes (32 KB each, 12 MB in all) the client never reads
  const id = 'x'.repeat(32 * 1024)
  for (let i = 0; i < 400; i++) send(JSON.stringify({ action: 0, id: `${i}${id}` }))
  for (let i = 0; i < 500 && size() > 0; i++) await Bun.sleep(10)
  expect(size()).toBe(0)
  expect((await cuts()) - cutBefore).toBeGreaterThanOrEqual(1)
  socket.destroy()
})

test('a LiveObjects sync larger than the socket takes is paced by the reader, not a reason to cut it', async () => {
  const size = () => rt.gw.server!.realtime.size
  for (let i = 0; i < 200 && size() > 0; i++) await Bun.sleep(10)
  const channel = fresh('lo-slow-sync')
  // 200 maps of 100 KB each: a sync of 20 MB, more than the loopback socket's buffers take
  const value = 'z'.repeat(100 * 1024)
  for (let made = 0; made < 200; made += 10) {
    const ops = Array.from({ length: 10 }, (_, i) => ({
      path: `m${made + i}`,
      mapCreate: { semantics: 0, entries: { v: { data: { string: value } } } },
    }))
    const r = await rt.gw.request(`/channels/${channel}/object`, { method: 'POST', json: ops })
    expect(r.status).toBe(200)
  }
  const { socket, send } = await nonReadingClient(`key=${encodeURIComponent(rt.gw.key)}&format=json`)
  send(JSON.stringify({ action: 10, channel, flags: 1 << 24 }))
  // the server has filled the socket and waits for room; now read it all: every page arrives
  let buf = Buffer.alloc(0)
  let objects = 0
  const done = new Promise<void>((resolve, reject) => {
    socket.on('close', () => reject(new Error(`cut after ${objects} objects`)))
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d])
      for (;;) {
        if (buf.length < 2) return
        let len = buf[1]! & 127
        let at = 2
        if (len === 126) [len, at] = [buf.readUInt16BE(2), 4]
        else if (len === 127) [len, at] = [Number(buf.readBigUInt64BE(2)), 10]
        if (buf.length < at + len) return
        const text = buf.subarray(at, at + len).toString()
        buf = buf.subarray(at + len)
        if ((buf.length === 0 && text[0] !== '{') || !text.startsWith('{')) continue
        const pm = JSON.parse(text)
        if (pm.action !== 20) continue
        objects += pm.state.length
        if (/^[\w-]+:$/.test(pm.channelSerial)) resolve()
      }
    })
  })
  // once the node holds the attachment, it has sent what the socket takes and waits for room
  const attachments = async () =>
    parseExposition(await (await fetch(`${rt.base}/metrics`)).text()).get('gateway_realtime_attachments')?.samples[0]
      ?.value ?? 0
  for (let i = 0; i < 500 && (await attachments()) < 1; i++) await Bun.sleep(10)
  expect(await attachments()).toBe(1)
  const cutBefore = await cuts()
  socket.resume()
  await done
  expect(objects).toBe(201)
  expect(await cuts()).toBe(cutBefore)
  socket.destroy()
}, 60_000)
