/**
 * ATTACH as the hosted service answers it, with the official `ably` client (msgpack and JSON) and
 * at the wire: the recognised channel params echoed in ATTACHED (`modes`, `delta`, `rewind`), the
 * `modes` param overriding the mode flags, the default modes (with `annotation_publish`), publish
 * and presence refused on an attachment without their mode (40160, 401) while a channel not
 * attached still takes publishes, invalid channel names refused (40010) on attach and publish with
 * the connection intact, HAS_BACKLOG only when rewound messages follow, and `rewind` ignored on an
 * attach that resumes.
 */
import { describe, expect, test } from 'bun:test'
import * as Ably from 'ably'
import { LiveObjects } from 'ably/liveobjects'
import { collect, connectedClient, FORMATS, fresh, realtimeGateway } from '../helpers/realtime'
import { rawConnected, type Pm } from '../helpers/realtime-raw'

const rt = realtimeGateway()

const ATTACH = 10
const ATTACHED = 11
const ERROR = 9
const MESSAGE = 15
const PRESENCE = 14
const SYNC = 16
const HAS_BACKLOG = 1 << 1
const ATTACH_RESUME = 1 << 5

describe.each(FORMATS)('ably-js Realtime over %s', (format, binary) => {
  const client = (opts: Ably.ClientOptions = {}) => connectedClient(rt.port, { key: rt.gw.key, ...opts }, binary)
  const fail = (p: Promise<unknown>) =>
    p.then(
      () => undefined as unknown as Ably.ErrorInfo,
      (e) => e as Ably.ErrorInfo,
    )

  describe('channel params and modes', () => {
    test('ATTACHED echoes the recognised params (modes, delta, rewind) as sent, and drops the others', async () => {
      const c = await client()
      const params = { modes: 'subscribe', delta: 'vcdiff', rewind: '1', nonexistent: 'foo' }
      const ch = c.channels.get(fresh('params'), { params })
      await ch.attach()
      expect(ch.params).toEqual({ modes: 'subscribe', delta: 'vcdiff', rewind: '1' })
      expect(ch.modes).toEqual(['subscribe'])
    })

    test('params.modes overrides the mode flags (not a union)', async () => {
      const c = await client()
      const ch = c.channels.get(fresh('params-modes'), {
        params: { modes: 'presence,subscribe' },
        modes: ['PUBLISH', 'PRESENCE_SUBSCRIBE'],
      })
      await ch.attach()
      expect(ch.modes).toEqual(['presence', 'subscribe'])
      expect(ch.params).toEqual({ modes: 'presence,subscribe' })
    })

    test('an attach asking for no modes gets the default set, annotation_publish included', async () => {
      const ch = (await client()).channels.get(fresh('default-modes'))
      await ch.attach()
      expect(ch.modes).toEqual(['presence', 'publish', 'subscribe', 'presence_subscribe', 'annotation_publish'])
      expect(ch.params).toEqual({})
    })

    test('a publish on an attachment without the publish mode is NACKed 40160 / 401; subscribing goes on', async () => {
      const c = await client()
      const name = fresh('no-publish')
      const ch = c.channels.get(name, { params: { modes: 'subscribe' } })
      const got = await collect(ch)
      const err = await fail(ch.publish('nope', 'x'))
      expect(err?.code).toBe(40160)
      expect(err?.statusCode).toBe(401)
      expect(ch.state).toBe('attached')
      expect(c.connection.state).toBe('connected')
      // the attachment still receives, and the refused message was never published
      await (await client()).channels.get(name).publish('other', 'from another client')
      expect((await got.until(1)).map((m) => m.data)).toEqual(['from another client'])
      expect((await rt.rest().channels.get(name).history()).items.map((m) => m.data)).toEqual(['from another client'])
      // a channel the connection has not attached takes publishes (no attach needed to publish)
      await c.channels.get(fresh('unattached')).publish('n', 'transient')
    })

    test('presence on an attachment without the presence mode is NACKed 40160 / 401; one with it enters', async () => {
      const c = await client()
      const name = fresh('no-presence')
      const ch = c.channels.get(name, { modes: ['PUBLISH', 'SUBSCRIBE'] })
      await ch.attach()
      const err = await fail(ch.presence.enterClient('ann', 'here'))
      expect(err?.code).toBe(40160)
      expect(err?.statusCode).toBe(401)
      expect(ch.state).toBe('attached')
      expect(c.connection.state).toBe('connected')
      // publishing on it is granted
      await ch.publish('n', 'allowed')
      const other = (await client()).channels.get(name, { params: { modes: 'presence,presence_subscribe' } })
      await other.presence.enterClient('bob', 'here')
      expect((await other.presence.get()).map((m) => m.clientId)).toEqual(['bob'])
    })
  })

  describe('invalid channel names', () => {
    test('attaching ":hell", "::" or "" fails the channel with 40010 / 400; the connection and other channels go on', async () => {
      const c = await client()
      for (const bad of [':hell', '::', '']) {
        const ch = c.channels.get(bad)
        const err = await fail(ch.attach())
        expect(err?.code).toBe(40010)
        expect(err?.statusCode).toBe(400)
        expect(ch.state).toBe('failed')
        expect(ch.errorReason?.code).toBe(40010)
      }
      expect(c.connection.state).toBe('connected')
      const ok = c.channels.get(`${fresh('room')}::$chat`)
      await ok.attach()
      expect(ok.state).toBe('attached')
    })

    test('a realtime publish to ":hell" is NACKed 40010; a REST publish gets 400 / 40010; "ns:a::b" is valid', async () => {
      const c = await client()
      const err = await fail(c.channels.get(':hell').publish('n', 'x'))
      expect(err?.code).toBe(40010)
      expect(err?.statusCode).toBe(400)
      expect(c.connection.state).toBe('connected')
      const rest = rt.rest({ binary })
      const restErr = await fail(rest.channels.get(':hell').publish('n', 'x'))
      expect(restErr?.code).toBe(40010)
      expect(restErr?.statusCode).toBe(400)
      // a `:` or `::` after the start is fine
      const inner = `${fresh('ns')}:a::b`
      await c.channels.get(inner).publish('n', 'fine')
      await rest.channels.get(inner).publish('n', 'fine too')
      expect((await rest.channels.get(inner).history()).items.map((m) => m.data)).toEqual(['fine too', 'fine'])
    })
  })

  describe('rewind flags', () => {
    test('HAS_BACKLOG only when rewound messages follow', async () => {
      const c = await client()
      const empty = c.channels.get(fresh('rewind-empty'), { params: { rewind: '5' } })
      const none = await empty.attach()
      expect(none?.hasBacklog).toBe(false)
      const name = fresh('rewind-some')
      await rt.rest({ binary }).channels.get(name).publish('n', 'old')
      const full = c.channels.get(name, { params: { rewind: '5' } })
      const got = await collect(full)
      expect(full.state).toBe('attached')
      expect((await got.until(1)).map((m) => m.data)).toEqual(['old'])
      const again = (await client()).channels.get(name, { params: { rewind: '5' } })
      expect((await again.attach())?.hasBacklog).toBe(true)
    })

    test('rewind counts and replays messages only: presence events and LiveObjects operations neither count nor replay (the members come in SYNC)', async () => {
      const name = fresh('rewind-kinds')
      const rest = rt.rest({ binary })
      await rest.channels.get(name).publish('n', 'a')
      await rest.channels.get(name).publish('n', 'b')
      const member = (await client({ clientId: 'cat' })).channels.get(name)
      await member.presence.enter('here')
      await member.presence.update('still here')
      const objects = rt.rest({ binary, plugins: { LiveObjects } })
      await (objects.channels.get(name) as any).object.publish({ path: 'votes', counterCreate: { count: 1 } })
      const { raw } = await rawConnected(rt.base, { key: rt.gw.key }, format)
      const mine = (f: Pm) => f.channel === name
      raw.send({ action: ATTACH, channel: name, params: { rewind: '2' } })
      const attached = await raw.next((f) => f.action === ATTACHED && mine(f), 5000)
      expect(attached.flags & HAS_BACKLOG).toBe(HAS_BACKLOG)
      await rest.channels.get(name).publish('n', 'live')
      await raw.next((f) => f.action === MESSAGE && mine(f) && f.messages.some((m: Pm) => m.data === 'live'), 5000)
      const after = raw.frames.slice(raw.frames.indexOf(attached))
      const data = after
        .filter((f) => f.action === MESSAGE && mine(f))
        .flatMap((f) => f.messages.map((m: Pm) => m.data))
      expect(data).toEqual(['a', 'b', 'live'])
      expect(after.filter((f) => f.action === PRESENCE && mine(f))).toEqual([])
      const synced = after.filter((f) => f.action === SYNC && mine(f)).flatMap((f) => f.presence)
      expect(synced.map((m: Pm) => [m.clientId, m.data])).toEqual([['cat', 'still here']])
    })

    test('rewind is ignored on an attach that resumes (ATTACH_RESUME, or a channelSerial no longer retained)', async () => {
      const name = fresh('rewind-resume')
      const rest = rt.rest({ binary })
      for (let i = 0; i < 3; i++) await rest.channels.get(name).publish('n', `old${i}`)
      const { raw } = await rawConnected(rt.base, { key: rt.gw.key }, format)
      const attached = (from: number) => raw.next((f) => f.action === ATTACHED && f.channel === name, 5000, from)
      const firstData = async (marker: string, from: number) => {
        await rest.channels.get(name).publish('n', marker)
        const f = await raw.next((f: Pm) => f.action === MESSAGE && f.channel === name, 5000, from)
        return f.messages.map((m: Pm) => m.data)
      }
      // the ATTACH_RESUME flag: the client was attached, nothing is replayed again
      let from = raw.frames.length
      raw.send({ action: ATTACH, channel: name, flags: ATTACH_RESUME, params: { rewind: '3' } })
      const a = await attached(from)
      expect(a.flags & HAS_BACKLOG).toBe(0)
      expect(await firstData('live1', from)).toEqual(['live1'])
      // a channelSerial that cannot be resumed (not retained): attached at the head, still no rewind
      from = raw.frames.length
      raw.send({ action: ATTACH, channel: name, channelSerial: '00000000000001-000000', params: { rewind: '3' } })
      const b = await attached(from)
      expect(b.error?.code).toBe(90003)
      expect(b.flags & HAS_BACKLOG).toBe(0)
      expect(await firstData('live2', from)).toEqual(['live2'])
      expect(raw.frames.some((f) => f.action === ERROR)).toBe(false)
    })
  })
})
