/**
 * Channels over the realtime protocol with the official `ably` client (msgpack and JSON):
 * attach/detach, publish with ACK and subscribe, payload types across formats, transient publish,
 * echo off, rewind, idempotent ids, history of a realtime channel, REST and event-stream
 * interplay, and the message size limit.
 */
import { describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { addKey } from '../helpers/gateway'
import { attachSerial, collect, connectedClient, FORMATS, fresh, realtimeGateway } from '../helpers/realtime'
import { rawConnected } from '../helpers/realtime-raw'
import { messages, openSse } from '../helpers/sse'

const MAX_MESSAGE_SIZE = 4096

const rt = realtimeGateway({ maxMessageSize: MAX_MESSAGE_SIZE })

/** Fixing the attach position of `channel` takes a while (as on a busy Redis); returns the undo. */
function slowAttach(channel: string): () => void {
  const broker = rt.gw.backend.broker
  const position = broker.position.bind(broker)
  broker.position = async (appId, ch) => {
    if (ch === channel) await Bun.sleep(50)
    return position(appId, ch)
  }
  return () => {
    broker.position = position
  }
}

describe.each(FORMATS)('ably-js Realtime over %s', (_format, binary) => {
  const client = (opts: Ably.ClientOptions = {}) => connectedClient(rt.port, { key: rt.gw.key, ...opts }, binary)
  /** The other format, for a subscriber that does not speak the publisher's. */
  const otherClient = (opts: Ably.ClientOptions = {}) => connectedClient(rt.port, { key: rt.gw.key, ...opts }, !binary)

  test('attach and detach: ATTACHED with an attach serial even on an empty channel, DETACHED', async () => {
    const c = await client()
    const ch = c.channels.get(fresh('attach'))
    await ch.attach()
    expect(ch.state).toBe('attached')
    expect(attachSerial(ch)).toMatch(/^\d{14}-\d{6}$/)
    await ch.detach()
    expect(ch.state).toBe('detached')
    // attaching again works
    await ch.attach()
    expect(ch.state).toBe('attached')
  })

  test('publish is ACKed after the broker has it; subscribers on both formats get every message in order', async () => {
    const pub = await client()
    const name = fresh('order')
    const same = await collect((await client()).channels.get(name))
    const other = await collect((await otherClient()).channels.get(name))
    const ch = pub.channels.get(name)
    const sent: string[] = []
    for (let i = 0; i < 30; i++) {
      await ch.publish('n', `m${i}`)
      sent.push(`m${i}`)
    }
    // acknowledged means stored: history has all of it at once
    const page = await rt.rest().channels.get(name).history({ direction: 'forwards', limit: 100 })
    expect(page.items.map((m) => m.data)).toEqual(sent)
    for (const sub of [same, other]) {
      await sub.until(30)
      expect(sub.messages.map((m) => m.data)).toEqual(sent)
      expect(sub.messages.map((m) => m.id)).toEqual(sent.map((_, i) => `${pub.connection.id}:${i}:0`))
      const serials = sub.messages.map((m) => m.serial!)
      expect([...serials].sort()).toEqual(serials)
    }
  })

  test('payloads survive both formats: text, JSON objects, binary, arrays of messages, extras', async () => {
    const pub = await client()
    const name = fresh('payloads')
    const same = await collect((await client()).channels.get(name))
    const other = await collect((await otherClient()).channels.get(name))
    const ch = pub.channels.get(name)
    await ch.publish('text', 'héllo')
    await ch.publish('json', { a: [1, 2, { b: null }], c: 'd' })
    await ch.publish('binary', Buffer.from([0, 1, 2, 255]))
    await ch.publish([
      { name: 'one', data: '1' },
      { name: 'two', data: '2', extras: { headers: { h: 'v' } } },
    ])
    for (const sub of [same, other]) {
      const got = await sub.until(5)
      expect(got.map((m) => m.name)).toEqual(['text', 'json', 'binary', 'one', 'two'])
      expect(got[0]!.data).toBe('héllo')
      expect(got[1]!.data).toEqual({ a: [1, 2, { b: null }], c: 'd' })
      expect(Buffer.from(got[2]!.data as Uint8Array)).toEqual(Buffer.from([0, 1, 2, 255]))
      expect(got[3]!.id).toBe(`${pub.connection.id}:3:0`)
      expect(got[4]!.id).toBe(`${pub.connection.id}:3:1`)
      expect(got[4]!.extras).toEqual({ headers: { h: 'v' } })
    }
  })

  test('subscribe and publish at once (the attach not awaited): the publisher receives its message', async () => {
    const name = fresh('at-once')
    const c = await client()
    const restore = slowAttach(name)
    try {
      const ch = c.channels.get(name)
      const got = new Promise<Ably.InboundMessage>((resolve) => void ch.subscribe(resolve))
      await ch.publish('n', 'at once')
      expect((await got).data).toBe('at once')
    } finally {
      restore()
    }
  })

  test('a publisher subscribed to its channel has its own message once the publish resolves (the echo before the ACK)', async () => {
    const ch = (await client()).channels.get(fresh('echo-first'))
    const got: unknown[] = []
    await ch.subscribe((m) => void got.push(m.data))
    for (let i = 0; i < 10; i++) {
      await ch.publish('n', `m${i}`)
      expect(got[got.length - 1]).toBe(`m${i}`)
    }
    await ch.publish({ name: 'e', data: 'ephemeral', extras: { ephemeral: true } } as Ably.Message)
    expect(got[got.length - 1]).toBe('ephemeral')
    await ch.publish([{ data: 'a' }, { data: 'b' }])
    expect(got.slice(-2)).toEqual(['a', 'b'])
    await Promise.all([ch.publish('x', 'c1'), ch.publish('x', 'c2'), ch.publish('x', 'c3')])
    expect(got.slice(-3).sort()).toEqual(['c1', 'c2', 'c3'])
  })

  test('transient publish: a channel never attached publishes, and stays unattached', async () => {
    const name = fresh('transient')
    const sub = await collect((await otherClient()).channels.get(name))
    const pub = await client()
    const ch = pub.channels.get(name)
    await ch.publish('t', 'not attached')
    expect(ch.state).toBe('initialized')
    expect((await sub.until(1))[0]!.data).toBe('not attached')
  })

  test('echo off: a connection does not receive its own messages, others do', async () => {
    const name = fresh('echo')
    const quiet = await client({ echoMessages: false })
    const own = await collect(quiet.channels.get(name))
    const other = await client()
    const theirs = await collect(other.channels.get(name))
    await quiet.channels.get(name).publish('mine', 'a')
    await other.channels.get(name).publish('theirs', 'b')
    await quiet.channels.get(name).publish('mine', 'c')
    await other.channels.get(name).publish('theirs', 'd')
    expect((await theirs.until(4)).map((m) => m.data)).toEqual(['a', 'b', 'c', 'd'])
    // 'd' came after everything 'quiet' published: once it is there, nothing of its own will follow
    await own.until(2)
    expect(own.messages.map((m) => m.data)).toEqual(['b', 'd'])
  })

  test('echo off in a shared batch: the frame another connection published in is filtered, not dropped', async () => {
    const name = fresh('echo-batch')
    const quiet = await client({ echoMessages: false })
    const own = await collect(quiet.channels.get(name))
    const other = await client()
    // both publish at once, so the hub may deliver their messages in one batch
    await Promise.all([
      quiet.channels.get(name).publish('mine', 'q1'),
      other.channels.get(name).publish('theirs', 'o1'),
      quiet.channels.get(name).publish('mine', 'q2'),
      other.channels.get(name).publish('theirs', 'o2'),
    ])
    await other.channels.get(name).publish('theirs', 'o3')
    await own.until(3)
    expect(own.messages.map((m) => m.data)).toEqual(['o1', 'o2', 'o3'])
  })

  test('rewind: the last N messages first (HAS_BACKLOG), then live; a window rewind too', async () => {
    const name = fresh('rewind')
    const r = rt.rest({ binary }).channels.get(name)
    for (let i = 0; i < 5; i++) await r.publish('n', `old${i}`)
    const c = await client()
    const ch = c.channels.get(name, { params: { rewind: '3' } })
    const got = await collect(ch)
    expect((await got.until(3)).map((m) => m.data)).toEqual(['old2', 'old3', 'old4'])
    await r.publish('n', 'live')
    expect((await got.until(4)).map((m) => m.data)).toEqual(['old2', 'old3', 'old4', 'live'])
    expect(ch.params).toEqual({ rewind: '3' })
    const windowed = await collect((await client()).channels.get(name, { params: { rewind: '1m' } }))
    expect((await windowed.until(6)).map((m) => m.data)).toEqual(['old0', 'old1', 'old2', 'old3', 'old4', 'live'])
  })

  test('an invalid rewind fails the attach with 40003; the connection goes on', async () => {
    const c = await client()
    const ch = c.channels.get(fresh('rewind-bad'), { params: { rewind: 'yesterday' } })
    const err = (await ch.attach().catch((e) => e)) as Ably.ErrorInfo
    expect(err.code).toBe(40003)
    expect(c.connection.state).toBe('connected')
  })

  test('idempotent publish: three publishes of one client-supplied id are delivered once', async () => {
    const name = fresh('idem')
    const sub = await collect((await otherClient()).channels.get(name))
    const ch = (await client()).channels.get(name)
    for (let i = 0; i < 3; i++) await ch.publish({ id: 'some_msg_id', name: 'n', data: 'once' })
    await ch.publish({ name: 'n', data: 'after' })
    expect((await sub.until(2)).map((m) => [m.id, m.data])).toEqual([
      ['some_msg_id', 'once'],
      [expect.any(String), 'after'],
    ])
    expect(sub.messages.length).toBe(2)
  })

  test('history of a realtime channel, and untilAttach: what came before the attach point', async () => {
    const name = fresh('hist')
    const c = await client()
    const ch = c.channels.get(name)
    await ch.publish('n', 'before1')
    await ch.publish('n', 'before2')
    await ch.attach()
    await ch.publish('n', 'after')
    const all = await ch.history()
    expect(all.items.map((m) => m.data)).toEqual(['after', 'before2', 'before1'])
    const untilAttach = await ch.history({ untilAttach: true })
    expect(untilAttach.items.map((m) => m.data)).toEqual(['before2', 'before1'])
    // paginated: the next page continues below the first, still within the attach point
    const paged = await ch.history({ untilAttach: true, limit: 1 })
    expect(paged.items.map((m) => m.data)).toEqual(['before2'])
    expect((await paged.next())!.items.map((m) => m.data)).toEqual(['before1'])
    // only backwards, as the hosted service allows
    const err = (await ch.history({ untilAttach: true, direction: 'forwards' }).catch((e) => e)) as Ably.ErrorInfo
    expect(err.code).toBe(40003)
  })

  test('untilAttach on a channel empty when attached: nothing, even once messages follow', async () => {
    const ch = (await client()).channels.get(fresh('hist-empty'))
    await ch.attach()
    await ch.publish('n', 'after')
    expect((await ch.history()).items.map((m) => m.data)).toEqual(['after'])
    expect((await ch.history({ untilAttach: true })).items).toEqual([])
  })

  test('a REST publish reaches a realtime subscriber; a realtime publish reaches an event-stream client', async () => {
    const name = fresh('cross')
    const sub = await collect((await client()).channels.get(name))
    const sse = await openSse(`${rt.base}/sse?v=1.2&channels=${name}&key=${encodeURIComponent(rt.gw.key)}`)
    expect(sse.status).toBe(200)
    try {
      await rt.rest({ binary: !binary }).channels.get(name).publish('rest', 'from REST')
      const c = await client({ clientId: 'rt' })
      await c.channels.get(name).publish('realtime', { from: 'realtime' })
      expect((await sub.until(2)).map((m) => m.data)).toEqual(['from REST', { from: 'realtime' }])
      const events = messages(await sse.until((e) => messages(e).length >= 2))
      const body = JSON.parse(events[1]!.data)
      expect([body.name, body.clientId, body.id, body.encoding]).toEqual([
        'realtime',
        'rt',
        `${c.connection.id}:0:0`,
        'json',
      ])
      expect(JSON.parse(body.data)).toEqual({ from: 'realtime' })
    } finally {
      sse.close()
    }
  })

  test('max message size: the client is told the limit and refuses beyond it; the server NACKs 40009 too', async () => {
    const c = await client()
    expect(
      (c.connection as unknown as { connectionManager: { connectionDetails: { maxMessageSize: number } } })
        .connectionManager.connectionDetails.maxMessageSize,
    ).toBe(MAX_MESSAGE_SIZE)
    const ch = c.channels.get(fresh('big'))
    const err = (await ch.publish('big', 'x'.repeat(MAX_MESSAGE_SIZE + 1)).catch((e) => e)) as Ably.ErrorInfo
    expect(err.code).toBe(40009)
    await ch.publish('fits', 'x'.repeat(MAX_MESSAGE_SIZE - 100))
  })

  test('a subscriber with only some channels allowed: refused ones fail alone', async () => {
    const key = await addKey(rt.gw, fresh('some'), { capability: { 'ok:*': ['subscribe'] } })
    const c = await client({ key })
    const ok = c.channels.get(fresh('ok:x'))
    await ok.attach()
    const no = c.channels.get(fresh('no'))
    expect(((await no.attach().catch((e) => e)) as Ably.ErrorInfo).code).toBe(40160)
    expect([ok.state, no.state, c.connection.state]).toEqual(['attached', 'failed', 'connected'])
  })
})

describe('wire details (raw WebSocket)', () => {
  const SUB = 1 << 18
  const PUB = 1 << 17

  test('a server-side NACK 40009 of an oversize publish leaves the connection serving', async () => {
    const { raw } = await rawConnected(rt.base, { key: rt.gw.key })
    const channel = fresh('raw-big')
    raw.send({ action: 15, channel, msgSerial: 0, messages: [{ data: 'x'.repeat(MAX_MESSAGE_SIZE + 1) }] })
    raw.send({ action: 15, channel, msgSerial: 1, messages: [{ data: 'fits' }] })
    const nack = await raw.next((f) => f.action === 2)
    expect([nack.msgSerial, nack.count, nack.error.code]).toEqual([0, 1, 40009])
    const ack = await raw.next((f) => f.action === 1)
    expect([ack.msgSerial, ack.count, ack.res[0].serials.length]).toEqual([1, 1, 1])
    raw.close()
  })

  test('ACK count counts protocol messages: a 3-message publish is count 1 with 3 serials', async () => {
    const { raw } = await rawConnected(rt.base, { key: rt.gw.key })
    const channel = fresh('raw-count')
    raw.send({ action: 15, channel, msgSerial: 0, messages: [{ data: 'a' }, { data: 'b' }, { data: 'c' }] })
    const ack = await raw.next((f) => f.action === 1)
    expect([ack.msgSerial, ack.count, ack.res.length, ack.res[0].serials.length]).toEqual([0, 1, 1, 3])
    // several protocol messages sent at once: every msgSerial answered exactly once, in order
    for (let i = 1; i <= 20; i++) raw.send({ action: 15, channel, msgSerial: i, messages: [{ data: `m${i}` }] })
    await raw.next(() => {
      const acks = raw.frames.filter((f) => f.action === 1)
      return acks.reduce((n, a) => n + a.count, 0) >= 21
    })
    const covered = raw.frames
      .filter((f) => f.action === 1)
      .flatMap((a) => Array.from({ length: a.count }, (_, k) => a.msgSerial + k))
    expect(covered).toEqual(Array.from({ length: 21 }, (_, i) => i))
    for (const a of raw.frames.filter((f) => f.action === 1)) expect(a.res.length).toBe(a.count)
    raw.close()
  })

  test('detach stops delivery: after DETACHED nothing of the channel is sent until it is attached again', async () => {
    const { raw } = await rawConnected(rt.base, { key: rt.gw.key })
    const channel = fresh('raw-detach')
    raw.send({ action: 10, channel })
    const attached = await raw.next((f) => f.action === 11)
    expect(attached.flags & (SUB | PUB)).toBe(SUB | PUB)
    raw.send({ action: 12, channel })
    await raw.next((f) => f.action === 13)
    const mark = raw.frames.length
    await rt.rest().channels.get(channel).publish('n', 'while detached')
    raw.send({ action: 10, channel })
    await raw.next((f) => f.action === 11, 5000, mark)
    await rt.rest().channels.get(channel).publish('n', 'attached again')
    await raw.next((f) => f.action === 15, 5000, mark)
    const after = raw.frames.slice(mark).filter((f) => f.channel === channel)
    expect(after.map((f) => f.action)).toEqual([11, 15])
    expect(after[1]!.messages.map((m: { data: string }) => m.data)).toEqual(['attached again'])
    raw.close()
  })

  test('ATTACH then MESSAGE back to back: the attach comes first, so the connection receives its message', async () => {
    const channel = fresh('raw-order')
    const restore = slowAttach(channel)
    try {
      const { raw } = await rawConnected(rt.base, { key: rt.gw.key })
      raw.send({ action: 10, channel })
      raw.send({ action: 15, channel, msgSerial: 0, messages: [{ data: 'after the attach' }] })
      const message = await raw.next((f) => f.action === 15)
      expect(message.messages.map((m: { data: string }) => m.data)).toEqual(['after the attach'])
      expect(raw.frames.filter((f) => f.channel === channel).map((f) => f.action)).toEqual([11, 15])
      raw.close()
    } finally {
      restore()
    }
  })

  test('a message clientId other than the connection identity is NACKed 40012 and not published', async () => {
    const { raw } = await rawConnected(rt.base, { key: rt.gw.key, clientId: 'alice' })
    const channel = fresh('raw-clientid')
    raw.send({ action: 15, channel, msgSerial: 0, messages: [{ data: 'x', clientId: 'bob' }] })
    const nack = await raw.next((f) => f.action === 2)
    expect(nack.error.code).toBe(40012)
    expect((await rt.rest().channels.get(channel).history()).items).toEqual([])
    raw.close()
  })
})
