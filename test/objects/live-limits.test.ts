/**
 * Bounds of the plugin's LiveObjects (objects per channel, keys per map, operation size) and
 * refused operations, with the official client over realtime (both formats, every backend): the
 * refusal carries the hosted service's code and nothing of the refused message is applied.
 */
import { describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { LiveCounter, LiveMap, LiveObjects } from 'ably/liveobjects'
import { ablyError } from '../helpers/ably'
import { addKey } from '../helpers/gateway'
import { connectedClient, FORMATS, fresh, realtimeGateway } from '../helpers/realtime'
import { rawConnected } from '../helpers/realtime-raw'
import { MODES } from './live-util'

const rt = realtimeGateway({ liveObjectsMaxObjects: 3, liveObjectsMaxMapKeys: 4, maxMessageSize: 4096 })

describe.each(FORMATS)('LiveObjects bounds over %s', (_format, binary) => {
  const rootOf = async (name: string, key = rt.gw.key, modes = MODES) => {
    const c = await connectedClient(rt.port, { key, plugins: { LiveObjects } } as Ably.ClientOptions, binary)
    return (c.channels.get(name, { modes }) as any).object.get()
  }

  test('objects per channel: the create past the bound is refused with 92001, nothing of its message applied', async () => {
    const root = await rootOf(fresh('lo-objects'))
    await root.set('a', LiveCounter.create(1))
    await root.set('b', LiveMap.create({ c: LiveCounter.create(2) }))
    const err = await ablyError(root.set('d', LiveCounter.create(3)))
    expect([err.code, err.statusCode]).toEqual([92001, 400])
    expect(root.compact()).toEqual({ a: 1, b: { c: 2 } })
    // the counters that exist still take operations
    await root.get('a').increment(1)
    expect(root.get('a').value()).toBe(2)
  })

  test('keys per map: 92001 past the bound; removing a key makes room', async () => {
    const root = await rootOf(fresh('lo-keys'))
    for (const k of ['k1', 'k2', 'k3', 'k4']) await root.set(k, 1)
    const err = await ablyError(root.set('k5', 1))
    expect(err.code).toBe(92001)
    await root.remove('k1')
    await root.set('k5', 5)
    expect(Object.keys(root.compact()).sort()).toEqual(['k2', 'k3', 'k4', 'k5'])
  })

  test('operation size past maxMessageSize: 40009', async () => {
    const root = await rootOf(fresh('lo-size'))
    const err = await ablyError(root.set('big', 'x'.repeat(5000)))
    expect([40009, 40000]).toContain(err.code)
    expect(root.compact()).toEqual({})
  })

  test('object-subscribe only: the object_publish mode is not granted, the read works', async () => {
    const key = await addKey(rt.gw, `lo-ro-${binary}`, { capability: { '*': ['object-subscribe'] } })
    const name = fresh('lo-ro')
    const root = await rootOf(name, key, ['OBJECT_SUBSCRIBE'] as any)
    expect(root.compact()).toEqual({})
    const writer = await rootOf(name)
    await writer.set('x', 1)
    const reader = await rootOf(name, key, ['OBJECT_SUBSCRIBE', 'OBJECT_PUBLISH'] as any)
    // the mode was not granted (ATTACHED without it): the client refuses before sending
    const err = await ablyError((async () => reader.set('y', 2))())
    expect(err.code).toBe(40024)
    expect(reader.compact()).toEqual({ x: 1 })
  })
})

describe('raw OBJECT frames', () => {
  test('a create whose id is not the hash of its initial value, a delete from a client, a bad id: NACK 92000', async () => {
    const { raw, connected } = await rawConnected(rt.base, { key: rt.gw.key })
    expect(connected.connectionDetails.siteCode).toBeTruthy()
    const channel = fresh('lo-raw')
    raw.send({ action: 10, channel, flags: (1 << 24) | (1 << 25) })
    await raw.next((m) => m.action === 11)
    const sync = await raw.next((m) => m.action === 20)
    expect(sync.state[0].object.objectId).toBe('root')
    expect(sync.channelSerial).toMatch(/^[\w-]+:$/)
    const bad = [
      {
        action: 3,
        objectId: `counter:${'A'.repeat(43)}@1`,
        counterCreateWithObjectId: { initialValue: '{"count":1}', nonce: 'n'.repeat(16) },
      },
      { action: 5, objectId: `counter:${'A'.repeat(43)}@1`, objectDelete: {} },
      { action: 1, objectId: 'nope', mapSet: { key: 'k', value: { string: 'v' } } },
      { action: 4, objectId: 'root', counterInc: { number: 1 } },
      { action: 1, objectId: 'root', mapSet: { key: 'k', value: { string: 'v', number: 1 } } },
    ]
    for (const [i, operation] of bad.entries()) {
      raw.send({ action: 19, channel, msgSerial: i, state: [{ operation }] })
      const nack = await raw.next((m) => m.action === 2 && m.msgSerial === i)
      expect([nack.msgSerial, nack.error.code]).toEqual([i, 92000])
    }
    raw.send({
      action: 19,
      channel,
      msgSerial: bad.length,
      state: [{ operation: { action: 1, objectId: 'root', mapSet: { key: 'k', value: { string: 'v' } } } }],
    })
    const ack = await raw.next((m) => m.action === 1)
    expect(ack.res[0].serials.length).toBe(1)
    const echo = await raw.next((m) => m.action === 19)
    expect(echo.state[0].serial).toBe(ack.res[0].serials[0])
    expect(echo.state[0].siteCode).toBeTruthy()
  })

  test('a resend after a resume is answered with its first serials and applied once (also without the publish memory)', async () => {
    const { raw, connected } = await rawConnected(rt.base, { key: rt.gw.key })
    const channel = fresh('lo-resend')
    raw.send({ action: 10, channel, flags: (1 << 24) | (1 << 25) })
    await raw.next((m) => m.action === 20)
    const inc = (msgSerial: number) =>
      raw.send({
        action: 19,
        channel,
        msgSerial,
        state: [
          { operation: { action: 2, objectId: 'root', mapRemove: { key: `k${msgSerial}` } } },
          { operation: { action: 1, objectId: 'root', mapSet: { key: 'n', value: { number: msgSerial } } } },
        ],
      })
    inc(0)
    const first = await raw.next((m) => m.action === 1 && m.msgSerial === 0)
    // the same msgSerial again: answered from the connection's memory
    inc(0)
    const again = await raw.next((m) => m.action === 1 && m.msgSerial === 0, 5000, raw.frames.indexOf(first) + 1)
    expect(again.res).toEqual(first.res)
    // as on a node the connection resumed to after its first node died: from the channel's log
    const conn = rt.gw.server!.realtime.connection(connected.connectionId) as any
    conn.acks.adopt({ answered: { get: () => undefined, set() {} }, inflight: new Map() })
    conn.operations.unknownPastUntil = Date.now() + 60_000
    inc(0)
    const fromLog = await raw.next((m) => m.action === 1 && m.msgSerial === 0, 5000, raw.frames.indexOf(again) + 1)
    expect(fromLog.res).toEqual(first.res)
    const echoes = raw.frames.filter((m) => m.action === 19)
    expect(echoes.length).toBe(1)
  })
})

describe('rate limits', () => {
  const limited = realtimeGateway({ rateLimits: true, limitObjectWritesPerSecond: 5, limitObjectReadsPerSecond: 2 })

  test('each operation is a state update of the account: 42910 past LIMIT_OBJECT_WRITES_PER_SECOND, nothing of a refused one applied', async () => {
    const c = await connectedClient(limited.port, {
      key: limited.gw.key,
      plugins: { LiveObjects },
    } as Ably.ClientOptions)
    const root = await (c.channels.get(fresh('lo-rate'), { modes: MODES }) as any).object.get()
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => root.set(`k${i}`, i)))
    const refused = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason.code)
    expect(refused.length).toBeGreaterThan(0)
    expect(new Set(refused)).toEqual(new Set([42910]))
    // what was accepted is all there is
    expect(Object.keys(root.compact()).length).toBe(20 - refused.length)
  })
})
