import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Broker, PublishOptions } from '../../src/core/ports'
import type { Message, MessageDraft } from '../../src/core/types'
import { formatSerial } from '../../src/core/model/serial'
import { createTestGateway, type TestGateway } from '../helpers/gateway'

// The Broker port's contract (core/ports.ts), held against whichever backend TEST_BACKEND names:
// `npm test` runs this file on the embedded store and again on Redis.
let gw: TestGateway
let broker: Broker
const APP = 'contract-app'
const plain: PublishOptions = { persisted: false }
beforeAll(async () => {
  gw = await createTestGateway()
  broker = gw.backend.broker
})
afterAll(async () => {
  await gw.close()
})

let n = 0
const fresh = () => `ch-${Date.now()}-${n++}`
const drafts = (...data: string[]): MessageDraft[] => data.map((d, i) => ({ id: `id-${n}-${i}-${d}`, data: d }))
const presence = (clientId: string, action: number): MessageDraft => ({
  kind: 'presence',
  id: `conn:${n++}:0`,
  action,
  clientId,
  connectionId: 'conn',
})
/** Waits for `count` deliveries on a subscription of the channel. */
function collect(channel: string) {
  const got: Message[] = []
  const unsubscribe = broker.subscribe(APP, channel, (_a, _c, msgs) => got.push(...msgs))
  return {
    got,
    unsubscribe,
    async until(count: number) {
      for (let i = 0; i < 500 && got.length < count; i++) await Bun.sleep(5)
      return got
    },
  }
}

describe('Broker contract', () => {
  test('publish assigns strictly increasing serials, comparable as strings, and timestamps', async () => {
    const ch = fresh()
    const a = await broker.publish(APP, ch, drafts('a', 'b'), plain)
    const b = await broker.publish(APP, ch, drafts('c'), plain)
    const serials = [...a.serials, ...b.serials]
    expect(a.appended).toBe(2)
    expect([...serials].sort()).toEqual(serials)
    expect(new Set(serials).size).toBe(3)
    const [m] = await broker.history(APP, ch, { limit: 1, direction: 'forwards' }, plain)
    expect(Math.abs(m!.timestamp - Date.now())).toBeLessThan(60_000)
  })

  test('client-supplied ids within the window are appended once; the duplicate gets the original serial', async () => {
    const ch = fresh()
    const d = [{ id: 'fixed:0', data: 'x' }]
    const first = await broker.publish(APP, ch, d, { persisted: false, clientIds: true })
    const again = await broker.publish(APP, ch, [{ id: 'fixed:0', data: 'x' }], { persisted: false, clientIds: true })
    expect(again.appended).toBe(0)
    expect(again.serials).toEqual(first.serials)
    expect(await broker.history(APP, ch, { limit: 10, direction: 'forwards' }, plain)).toHaveLength(1)
  })

  test('history pages in both directions with cursors; only messages unless every entry is asked for', async () => {
    const ch = fresh()
    await broker.publish(APP, ch, drafts('m1', 'm2'), plain)
    await broker.publish(APP, ch, [presence('ann', 2)], plain)
    await broker.publish(APP, ch, drafts('m3', 'm4', 'm5'), plain)
    const data = (ms: Message[]) => ms.map((m) => (m.kind ? `${m.kind}:${m.clientId}` : m.data))
    const back = await broker.history(APP, ch, { limit: 2, direction: 'backwards' }, plain)
    expect(data(back)).toEqual(['m5', 'm4'])
    const back2 = await broker.history(APP, ch, { limit: 2, direction: 'backwards', cursor: back[1]!.serial }, plain)
    expect(data(back2)).toEqual(['m3', 'm2'])
    const fwd = await broker.history(APP, ch, { limit: 3, direction: 'forwards' }, plain)
    expect(data(fwd)).toEqual(['m1', 'm2', 'm3'])
    const all = await broker.history(APP, ch, { limit: 3, direction: 'backwards', entries: 'all' }, plain)
    expect(data(all)).toEqual(['m5', 'm4', 'm3'])
    const all2 = await broker.history(APP, ch, { limit: 10, direction: 'forwards', entries: 'all' }, plain)
    expect(data(all2)).toEqual(['m1', 'm2', 'presence:ann', 'm3', 'm4', 'm5'])
  })

  test.each([
    ['a channel', plain],
    ['a persisted channel', { persisted: true }],
  ] as const)(
    'change entries keep kind, action and mutation through every read of %s; message history skips them',
    async (_what, opts) => {
      const ch = fresh()
      const sub = collect(ch)
      // a subscriber registers, then asks the position: deliveries after it reach the subscriber
      // (a Redis subscription is confirmed asynchronously; position waits for it)
      const start = await broker.position(APP, ch)
      const [serial] = (await broker.publish(APP, ch, [{ id: 'orig:0', name: 'n', data: 'a', clientId: 'pub' }], opts))
        .serials
      const change: MessageDraft = {
        id: 'orig:0',
        kind: 'mutation',
        action: 5,
        name: 'n',
        data: new Uint8Array([1, 2, 3]),
        clientId: 'pub',
        extras: { headers: { h: 'v' } },
        mutation: { serial: serial!, timestamp: 1234, clientId: 'editor', description: 'why', metadata: { m: [1] } },
      }
      const expected = { ...change, data: [1, 2, 3] }
      const [versionSerial] = (await broker.publish(APP, ch, [{ ...change }], opts)).serials
      expect(versionSerial! > serial!).toBe(true)
      const norm = (m: Message | undefined) => m && { ...m, data: m.data instanceof Uint8Array ? [...m.data] : m.data }

      const history = await broker.history(APP, ch, { limit: 10, direction: 'forwards' }, opts)
      expect(history.map((m) => m.serial)).toEqual([serial!])
      // the ring (and, on Redis, the stream) keeps every entry kind; a rewind reads messages and their versions
      const all = await broker.history(APP, ch, { limit: 10, direction: 'forwards', entries: 'all' }, plain)
      expect(norm(all[1])).toMatchObject({ ...expected, serial: versionSerial })
      await broker.publish(APP, ch, [presence('ann', 2)], plain)
      const versions = await broker.history(APP, ch, { limit: 2, direction: 'backwards', entries: 'versions' }, plain)
      expect(versions.map((m) => m.serial)).toEqual([versionSerial!, serial!])
      const { messages } = await broker.readAfter(APP, ch, start, 10)
      expect(norm(messages[1])).toMatchObject({ ...expected, serial: versionSerial })
      await sub.until(2)
      expect(norm(sub.got[1])).toMatchObject({ ...expected, serial: versionSerial })
      sub.unsubscribe()
    },
  )

  test('position is the newest serial, or below any future one on an empty channel', async () => {
    const ch = fresh()
    const empty = await broker.position(APP, ch)
    const { serials } = await broker.publish(APP, ch, drafts('a'), plain)
    expect(serials[0]! > empty).toBe(true)
    expect(await broker.position(APP, ch)).toBe(serials[0]!)
  })

  test('readAfter returns every entry kind after a serial, oldest first, limited, with no gap inside retention', async () => {
    const ch = fresh()
    const start = await broker.position(APP, ch)
    await broker.publish(APP, ch, drafts('a'), plain)
    const p = await broker.publish(APP, ch, [presence('bob', 2)], plain)
    await broker.publish(APP, ch, drafts('b', 'c'), plain)
    const { messages, gap } = await broker.readAfter(APP, ch, start, 10)
    expect(gap).toBe(false)
    expect(messages.map((m) => m.data ?? m.kind)).toEqual(['a', 'presence', 'b', 'c'])
    expect(messages[1]).toMatchObject({ kind: 'presence', clientId: 'bob', action: 2, connectionId: 'conn' })
    const after = await broker.readAfter(APP, ch, p.serials[0]!, 1)
    expect(after.messages.map((m) => m.data)).toEqual(['b'])
  })

  test('readAfter reports a gap for a position older than what is retained', async () => {
    const ch = fresh()
    await broker.publish(APP, ch, drafts('a'), plain)
    const { gap } = await broker.readAfter(APP, ch, '00000000000001-000000', 10)
    expect(gap).toBe(true)
  })

  test('subscribers get every entry once, in publish order, from every publish; unsubscribe stops delivery', async () => {
    const ch = fresh()
    const sub = collect(ch)
    await broker.position(APP, ch) // registered, then asked: what is published from here on is delivered
    const published: string[] = []
    for (let i = 0; i < 20; i++) {
      const r = await broker.publish(APP, ch, drafts(`x${i}`, `y${i}`), plain)
      published.push(...r.serials)
    }
    await sub.until(40)
    expect(sub.got.map((m) => m.serial)).toEqual(published)
    sub.unsubscribe()
    await broker.publish(APP, ch, drafts('late'), plain)
    await Bun.sleep(50)
    expect(sub.got).toHaveLength(40)
  })

  test('channels lists channels with retained messages by prefix, sorted, after a name', async () => {
    const prefix = `list-${Date.now()}-`
    for (const s of ['b', 'a', 'c']) await broker.publish(APP, prefix + s, drafts('x'), plain)
    expect(await broker.channels(APP, prefix, undefined, 10)).toEqual([prefix + 'a', prefix + 'b', prefix + 'c'])
    expect(await broker.channels(APP, prefix, prefix + 'a', 1)).toEqual([prefix + 'b'])
  })

  test.each([
    ['not persisted', false],
    ['persisted', true],
  ])('serialsOf finds messages published findable by id (%s); ids not there are absent', async (_what, persisted) => {
    const ch = fresh()
    const opts: PublishOptions = { persisted, findable: true }
    const { serials } = await broker.publish(
      APP,
      ch,
      [
        { id: 'conn-a:7:0', data: 'x' },
        { id: 'conn-a:7:1', data: 'y' },
      ],
      opts,
    )
    await broker.publish(APP, ch, [{ id: 'conn-a:8:0', data: 'z' }], opts)
    const found = await broker.serialsOf(APP, ch, ['conn-a:7:0', 'conn-a:7:1', 'conn-a:9:0', 'conn-a:7:'], {
      persisted,
    })
    expect(Object.fromEntries(found)).toEqual({ 'conn-a:7:0': serials[0]!, 'conn-a:7:1': serials[1]! })
    expect((await broker.serialsOf(APP, fresh(), ['conn-a:7:0'], { persisted })).size).toBe(0)
  })

  test('serialsOf of a persisted channel finds a message behind 1,500 newer ones', async () => {
    const ch = fresh()
    const opts: PublishOptions = { persisted: true, findable: true }
    const [serial] = (await broker.publish(APP, ch, [{ id: 'conn-b:1:0', data: 'first' }], opts)).serials
    for (let i = 0; i < 15; i++) {
      const batch = Array.from({ length: 100 }, (_, j) => ({ id: `conn-c:${i}:${j}`, data: 'later' }))
      await broker.publish(APP, ch, batch, opts)
    }
    expect([...(await broker.serialsOf(APP, ch, ['conn-b:1:0'], { persisted: true }))]).toEqual([
      ['conn-b:1:0', serial!],
    ])
  })

  test('a resolved publish is with the listener once `delivered` settles (the broker has it only when its appends reach listeners later)', async () => {
    const ch = fresh()
    const got: string[] = []
    const unsubscribe = broker.subscribe(APP, ch, (_a, _c, msgs) => void got.push(...msgs.map((m) => m.serial)))
    await broker.position(APP, ch)
    for (let i = 0; i < 20; i++) {
      const { serials } = await broker.publish(APP, ch, drafts(`d${i}`, `e${i}`), plain)
      await broker.delivered?.(APP, ch, serials[1]!)
      expect(got.slice(-2)).toEqual(serials)
    }
    const ephemeral = await broker.publish(APP, ch, [{ id: `eph-${n}`, data: 'live', extras: { ephemeral: true } }], {
      persisted: false,
      ephemeral: true,
    })
    await broker.delivered?.(APP, ch, ephemeral.serials[0]!)
    expect(got[got.length - 1]).toBe(ephemeral.serials[0]!)
    // an entry that never comes holds no caller for good: settled after the bound, or by the unsubscribe
    const never = formatSerial(Date.now() + 3_600_000, 0)
    await broker.delivered?.(APP, ch, never)
    const pending = broker.delivered?.(APP, ch, never)
    unsubscribe()
    await pending
    expect(broker.delivered?.(APP, ch, never)).toBeUndefined()
  })

  test('ready answers true while the backend is reachable', async () => {
    expect(await broker.ready()).toBe(true)
  })
})
