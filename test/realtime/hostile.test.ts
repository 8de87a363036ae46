/**
 * Hostile and broken realtime clients (raw WebSockets): malformed JSON and msgpack frames,
 * frames of the wrong type, unknown actions, bad fields, huge and deeply nested frames, frames
 * before CONNECTED. Each gets an ERROR (connection-level: then the socket closes) or a NACK or a
 * channel ERROR, never a crash or a hang, and the node keeps serving an honest client meanwhile.
 */
import { afterEach, describe, expect, test } from 'bun:test'
import { pack } from 'msgpackr'
import { closeClients, collect, connectedClient, fresh, realtimeGateway } from '../helpers/realtime'
import { RawClient, rawConnected, realtimeUrl, type Pm } from '../helpers/realtime-raw'

const MAX_FRAME = 65_536

const rt = realtimeGateway({ realtimeMaxFrameSize: MAX_FRAME, realtimeMaxChannels: 5 })
afterEach(async () => {
  // after every hostile client, an honest one still connects, publishes and receives
  const client = await connectedClient(rt.port, { key: rt.gw.key })
  const ch = client.channels.get(`honest-${Math.random()}`)
  const got = await collect(ch)
  await ch.publish('n', 'still serving')
  await got.until(1)
  closeClients()
  // and no connection is left behind on the node
  for (let i = 0; i < 200 && rt.gw.server!.realtime.size > 0; i++) await Bun.sleep(10)
  expect(rt.gw.server!.realtime.size).toBe(0)
})

/** 10,000 nested arrays around "x", in each format, standing in for the value DEEP of a frame. */
const DEEP = 'deep-placeholder'
const deepJson = '['.repeat(10_000) + '"x"' + ']'.repeat(10_000)
const deepMsgpack = Buffer.concat([Buffer.alloc(10_000, 0x91), Buffer.from(pack('x'))])

/** The connection-level ERROR a client got, after which the server closed the socket. */
async function fatal(raw: RawClient): Promise<Pm['error']> {
  const err = await raw.next((f) => f.action === 9 && f.channel === undefined)
  await raw.closing()
  return err.error
}

describe.each(['json', 'msgpack'] as const)('%s connections', (format) => {
  const connect = () => rawConnected(rt.base, { key: rt.gw.key }, format).then((c) => c.raw)

  test('an undecodable frame: ERROR 40000 and the socket closes', async () => {
    const raw = await connect()
    raw.send(format === 'json' ? '{"action": 10, "channel": ' : new Uint8Array([0xc1, 0xff, 0x00]))
    expect((await fatal(raw)).code).toBe(40000)
  })

  test('a frame of the other type (binary on JSON, text on msgpack): ERROR 40000', async () => {
    const raw = await connect()
    raw.send(format === 'json' ? pack({ action: 0, id: 'x' }) : JSON.stringify({ action: 0, id: 'x' }))
    expect((await fatal(raw)).code).toBe(40000)
  })

  test.each([
    ['an array', [1, 2, 3]],
    ['a number', 42],
    ['null', null],
    ['an object without action', { channel: 'x' }],
    ['a string action', { action: '15' }],
  ])('%s instead of a protocol message: ERROR 40000', async (_what, value) => {
    const raw = await connect()
    raw.send(format === 'json' ? JSON.stringify(value) : pack(value))
    expect((await fatal(raw)).code).toBe(40000)
  })

  test('an unknown action: ERROR 40000 naming it', async () => {
    const raw = await connect()
    raw.send({ action: 99 })
    const err = await fatal(raw)
    expect(err.code).toBe(40000)
    expect(err.message).toContain('99')
  })

  test('a frame over REALTIME_MAX_FRAME_SIZE: ERROR 40009', async () => {
    const raw = await connect()
    raw.send({ action: 15, channel: 'big', msgSerial: 0, messages: [{ data: 'x'.repeat(MAX_FRAME + 10) }] })
    expect((await fatal(raw)).code).toBe(40009)
  })

  test('a frame far over the limit (beyond what the socket accepts at all): the socket closes', async () => {
    const raw = await connect()
    raw.send({ action: 15, channel: 'huge', msgSerial: 0, messages: [{ data: 'x'.repeat(4 * MAX_FRAME) }] })
    const closed = await raw.closing()
    expect(closed.code).not.toBe(1000)
  })

  test('nesting deeper than 64 levels (10,000 here): ERROR 40000', async () => {
    const raw = await connect()
    const frame = { action: 15, channel: 'deep', msgSerial: 0, messages: [{ data: 'x', extras: { deep: DEEP } }] }
    if (format === 'json') raw.send(JSON.stringify(frame).replace(JSON.stringify(DEEP), deepJson))
    else {
      // built by hand: the encoder itself recurses
      const bytes = Buffer.from(pack(frame))
      const at = bytes.indexOf(Buffer.from(pack(DEEP)))
      raw.send(Buffer.concat([bytes.subarray(0, at), deepMsgpack, bytes.subarray(at + pack(DEEP).length)]))
    }
    expect((await fatal(raw)).code).toBe(40000)
  })

  test.each([
    ['missing', undefined],
    ['negative', -1],
    ['fractional', 1.5],
    ['a string', '0'],
  ])('a MESSAGE with a msgSerial %s: ERROR 40000 (it cannot be answered)', async (_what, msgSerial) => {
    const raw = await connect()
    raw.send({ action: 15, channel: 'x', msgSerial, messages: [{ data: 'x' }] })
    expect((await fatal(raw)).code).toBe(40000)
  })

  test.each([
    ['no messages', undefined],
    ['messages not an array', 'hello'],
    ['an empty array', []],
    ['a message that is not an object', [42]],
    ['a name that is not a string', [{ name: { no: 1 }, data: 'x' }]],
  ])('a MESSAGE with %s: NACKed, the connection serves on', async (_what, messages) => {
    const raw = await connect()
    raw.send({ action: 15, channel: fresh('bad'), msgSerial: 0, messages })
    const nack = await raw.next((f) => f.action === 2)
    expect([nack.msgSerial, nack.count, Math.floor(nack.error.code / 1000)]).toEqual([0, 1, 40])
    raw.send({ action: 15, channel: fresh('good'), msgSerial: 1, messages: [{ data: 'ok' }] })
    expect((await raw.next((f) => f.action === 1)).msgSerial).toBe(1)
    raw.close()
  })

  test('a MESSAGE without a channel, or with an invalid channel name: NACKed', async () => {
    const raw = await connect()
    raw.send({ action: 15, msgSerial: 0, messages: [{ data: 'x' }] })
    raw.send({ action: 15, channel: '', msgSerial: 1, messages: [{ data: 'x' }] })
    raw.send({ action: 15, channel: 'x'.repeat(10_000), msgSerial: 2, messages: [{ data: 'x' }] })
    await raw.next((f) => f.action === 2 && f.msgSerial === 2)
    expect(raw.frames.filter((f) => f.action === 2).map((f) => f.msgSerial)).toEqual([0, 1, 2])
    raw.close()
  })

  test('a PRESENCE enter on the channel "": NACKed 40010, the connection serves on', async () => {
    const raw = (await rawConnected(rt.base, { key: rt.gw.key, clientId: 'someone' }, format)).raw
    raw.send({ action: 14, channel: '', msgSerial: 0, presence: [{ action: 2, data: 'x' }] })
    const nack = await raw.next((f) => f.action === 2)
    expect([nack.msgSerial, nack.error.code]).toEqual([0, 40010])
    raw.send({ action: 0, id: 'alive' })
    await raw.next((f) => f.action === 0 && f.id === 'alive')
    raw.close()
  })

  test.each([
    ['params that are not an object', { channel: 'p', params: 'rewind=1' }],
    ['flags that are not a number', { channel: 'f', flags: 'all' }],
    ['a garbage channelSerial', { channel: 'cs', channelSerial: '../../etc' }],
    ['a qualified channel name', { channel: '[?rewind=1]q' }],
    ['a channel name with a control character', { channel: 'a\u0001b' }],
    ['a channel name over 1,024 characters', { channel: 'x'.repeat(2000) }],
  ])(
    'an ATTACH with %s: ATTACHED or a channel ERROR naming the channel, the connection serves on',
    async (_what, fields) => {
      const raw = await connect()
      raw.send({ action: 10, ...fields })
      const answer = await raw.next((f) => f.action === 11 || f.action === 9)
      expect(answer.channel).toBe(fields.channel)
      if (answer.action === 9) expect(answer.error.code).toBe(40010)
      raw.send({ action: 0, id: 'alive' })
      await raw.next((f) => f.action === 0 && f.id === 'alive')
      expect(raw.closed).toBeUndefined()
      raw.close()
    },
  )

  // a channel ERROR must carry a channel field: one without reads as the connection's
  test.each([
    ['ATTACH', 10],
    ['DETACH', 12],
    ['SYNC', 16],
  ])('%s naming no channel: ERROR 40000 and the socket closes', async (_name, action) => {
    for (const fields of [{}, { channel: null }]) {
      const raw = await connect()
      raw.send({ action, ...fields })
      expect((await fatal(raw)).code).toBe(40000)
    }
  })

  // an empty name is a name (RTL4d): its channel fails with 40010, the connection serves on
  test.each([
    ['ATTACH', 10],
    ['DETACH', 12],
    ['SYNC', 16],
  ])('%s of the channel "": a channel ERROR 40010 with channel "", the connection serves on', async (_name, action) => {
    const raw = await connect()
    raw.send({ action, channel: '' })
    const answer = await raw.next((f) => f.action === 9)
    expect([answer.channel, answer.error.code]).toEqual(['', 40010])
    raw.send({ action: 0, id: 'alive' })
    await raw.next((f) => f.action === 0 && f.id === 'alive')
    expect(raw.closed).toBeUndefined()
    raw.close()
  })

  test.each([
    ['ATTACH', { action: 10 }],
    ['DETACH', { action: 12 }],
    ['SYNC', { action: 16 }],
    ['MESSAGE', { action: 15, msgSerial: 0, messages: [{ data: 'x' }] }],
    ['PRESENCE', { action: 14, msgSerial: 0, presence: [{ action: 2 }] }],
  ])('%s with a channel that is not a string: ERROR 40000 and the socket closes', async (_name, frame) => {
    for (const channel of [5, { name: 'x' }, ['x'], true]) {
      const raw = await connect()
      raw.send({ ...frame, channel })
      const err = await fatal(raw)
      expect(err.code).toBe(40000)
      expect(err.message).toContain('channel must be a string')
    }
  })

  test('attaching more channels than REALTIME_MAX_CHANNELS: channel ERROR 90010 for the extra ones', async () => {
    const raw = await connect()
    for (let i = 0; i < 7; i++) raw.send({ action: 10, channel: `many-${i}` })
    await raw.next(() => raw.frames.filter((f) => f.action === 11 || f.action === 9).length === 7)
    const refused = raw.frames.filter((f) => f.action === 9)
    expect(refused.map((f) => f.error.code)).toEqual([90010, 90010])
    raw.close()
  })

  test('AUTH with garbage: the connection fails with an authentication error', async () => {
    const raw = await connect()
    raw.send({ action: 17, auth: { accessToken: 'not-a-token' } })
    const err = await fatal(raw)
    expect(err.statusCode).toBe(401)
  })

  test('AUTH without a token: the connection fails with 40101', async () => {
    const raw = await connect()
    raw.send({ action: 17, auth: 'nope' })
    expect((await fatal(raw)).code).toBe(40101)
  })

  test('PRESENCE, ANNOTATION and OBJECT frames are NACKed (not served yet); SYNC and ACTIVATE ignored', async () => {
    const raw = await connect()
    raw.send({ action: 16, channel: 'x' })
    raw.send({ action: 18 })
    raw.send({ action: 14, channel: 'x', msgSerial: 0, presence: [{ action: 2 }] })
    raw.send({ action: 21, channel: 'x', msgSerial: 1, annotations: [] })
    raw.send({ action: 19, channel: 'x', msgSerial: 2, state: [] })
    await raw.next((f) => f.action === 2 && f.msgSerial === 2)
    expect(raw.frames.filter((f) => f.action === 2).map((f) => f.msgSerial)).toEqual([0, 1, 2])
    expect(raw.closed).toBeUndefined()
    raw.close()
  })
})

describe('before and around CONNECTED', () => {
  test('frames sent right after the upgrade are served once the connection exists, in order', async () => {
    const channel = fresh('early')
    const raw = new RawClient(realtimeUrl(rt.base, { key: rt.gw.key, format: 'json' }))
    await raw.opened
    raw.send({ action: 10, channel })
    raw.send({ action: 15, channel, msgSerial: 0, messages: [{ data: 'early' }] })
    const actions = () => raw.frames.map((f) => f.action)
    await raw.next((f) => f.action === 15)
    await raw.next((f) => f.action === 1) // the ACK (answers go out once per event-loop turn)
    expect(actions().slice(0, 2)).toEqual([4, 11])
    raw.close()
  })

  test('a flood of frames before CONNECTED: the socket is closed (1008), nothing is left behind', async () => {
    // authentication takes its time, so that every frame arrives before the connection exists
    const auth = rt.gw.core.auth
    const authenticate = auth.authenticate.bind(auth)
    let release!: () => void
    const held = new Promise<void>((r) => (release = r))
    auth.authenticate = async (...args) => {
      await held
      return authenticate(...args)
    }
    try {
      const raw = new RawClient(realtimeUrl(rt.base, { key: rt.gw.key, format: 'json' }))
      await raw.opened
      for (let i = 0; i < 1000; i++) raw.send({ action: 0, id: `flood-${i}` })
      expect((await raw.closing()).code).toBe(1008)
      release()
      await Bun.sleep(20)
      expect(raw.frames).toEqual([])
      expect(rt.gw.server!.realtime.size).toBe(0)
    } finally {
      auth.authenticate = authenticate
      release()
    }
  })

  test('no credentials: ERROR 40101-family, then the socket closes', async () => {
    const raw = new RawClient(realtimeUrl(rt.base, { format: 'json' }))
    const err = await fatal(raw)
    expect(err.statusCode).toBe(401)
  })

  test('an unknown format: ERROR 40003 as JSON, then the socket closes', async () => {
    const raw = new RawClient(realtimeUrl(rt.base, { key: rt.gw.key, format: 'xml' }))
    expect((await fatal(raw)).code).toBe(40003)
  })

  test('a client that goes away while it is being authenticated leaves nothing behind', async () => {
    for (let i = 0; i < 20; i++) {
      const raw = new RawClient(realtimeUrl(rt.base, { key: rt.gw.key, format: 'json' }))
      await raw.opened
      raw.ws.close()
    }
    // (afterEach checks that the node holds no connection)
  })

  test('a non-upgrade GET / is ordinary HTTP, not a realtime connection', async () => {
    const r = await fetch(`${rt.base}/`)
    expect(r.status).toBeLessThan(500)
  })
})
