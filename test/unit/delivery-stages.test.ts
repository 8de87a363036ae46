/**
 * Delivery stages with the test clock (no sleeping): append rollup (windows, channel order,
 * bounds, data that cannot be joined), a late joiner's first delivery (order behind the lookup,
 * appends the whole data holds dropped, the session paused and resumed), batching and conflation
 * of a channel (order, keys, whole changes superseding, batches of at most 200, bounds), and
 * conflation keys in the hosted syntax.
 */
import { describe, expect, test } from 'bun:test'
import { AppendRollup } from '../../src/core/fanout/append-rollup'
import { ChannelHold, MAX_BATCH } from '../../src/core/fanout/channel-hold'
import { compileKey } from '../../src/core/model/conflation-key'
import { LateJoin, type JoinedState } from '../../src/core/fanout/late-join'
import { formatSerial } from '../../src/core/model/serial'
import type { Message } from '../../src/core/types'
import { ClockTimers, TestClock } from '../helpers/gateway'

let n = 0
const serial = () => formatSerial(1_000_000, ++n)
const create = (data = 'x', extra: Partial<Message> = {}): Message => ({
  id: `m${n}`,
  serial: serial(),
  timestamp: 1,
  data,
  ...extra,
})
const change = (of: Message, action: 1 | 2 | 5, data: string | Uint8Array, extra: Partial<Message> = {}): Message => ({
  id: of.id,
  serial: serial(),
  timestamp: 2,
  kind: 'mutation',
  action,
  data,
  mutation: { serial: of.serial, timestamp: of.timestamp },
  ...extra,
})
const append = (of: Message, data: string | Uint8Array, extra: Partial<Message> = {}) => change(of, 5, data, extra)

function sink() {
  const batches: Message[][] = []
  return { batches, next: (b: Message[]) => (batches.push(b), true), flat: () => batches.flat() }
}
const clock = () => {
  const c = new TestClock(0)
  return new ClockTimers(c)
}
const bounds = { maxMessages: 100, maxBytes: 65536 }

describe('AppendRollup', () => {
  test('the first append goes at once; the rest of the window goes joined when it ends; then the window closes', () => {
    const timers = clock()
    const out = sink()
    const r = new AppendRollup(out.next, 40, timers, bounds)
    const m = create('Hel')
    const first = [append(m, 'l')]
    r.push([m])
    r.push(first)
    expect(out.batches[1]).toBe(first) // the very array: shared serialization
    r.push([append(m, 'o')])
    r.push([append(m, ' wor'), append(m, 'ld')])
    expect(out.batches.length).toBe(2)
    timers.advance(40)
    const joined = out.batches[2]!
    expect(joined.map((x) => [x.action, x.data, x.mutation!.serial])).toEqual([[5, 'o world', m.serial]])
    expect(joined[0]!.serial).toBe(out.flat().at(-1)!.serial)
    // a window with nothing held closes: the next append goes at once again
    timers.advance(40)
    r.push([append(m, '!')])
    expect(out.batches.at(-1)!.map((x) => x.data)).toEqual(['!'])
    expect(out.batches.length).toBe(4)
  })

  test('another entry sends what is held first (channel order); held appends go in the order of their latest serial', () => {
    const timers = clock()
    const out = sink()
    const r = new AppendRollup(out.next, 40, timers, bounds)
    const a = create('a')
    const b = create('b')
    r.push([append(a, '1')]) // opens the window
    const a2 = append(a, '2')
    const b1 = append(b, 'x')
    const a3 = append(a, '3')
    const other = create('next')
    r.push([a2, b1, a3, other])
    const got = out.batches[1]!
    expect(got.map((x) => x.data)).toEqual(['x', '23', 'next'])
    expect(got.map((x) => x.serial)).toEqual([b1.serial, a3.serial, other.serial])
  })

  test('text and bytes are not joined; the bounds send what is held at once', () => {
    const timers = clock()
    const out = sink()
    const r = new AppendRollup(out.next, 40, timers, { maxMessages: 2, maxBytes: 10 })
    const a = create('a')
    r.push([append(a, 'go')])
    r.push([append(a, 'ab'), append(a, new Uint8Array([1, 2]))])
    expect(out.batches[1]!.map((x) => x.data)).toEqual(['ab'])
    const b = create('b')
    const c = create('c')
    r.push([append(b, '1'), append(c, '2')]) // three messages held: past maxMessages
    expect(out.batches[2]!.map((x) => x.data)).toEqual([new Uint8Array([1, 2]), '1'])
    r.push([append(c, '0123456789')]) // past maxBytes
    expect(out.batches[3]!.map((x) => x.data)).toEqual(['2'])
    timers.advance(40)
    expect(out.batches[4]!.map((x) => x.data)).toEqual(['0123456789'])
    r.dispose()
  })
})

describe('LateJoin', () => {
  const deferred = () => {
    const calls: Array<{ append: Message; resolve: (v: Awaited<ReturnType<JoinedState>>) => void }> = []
    const lookup: JoinedState = (append) => new Promise((resolve) => calls.push({ append, resolve }))
    return { calls, lookup }
  }
  const tick = () => new Promise((r) => setTimeout(r, 0))

  test('the first append of a message from before the start waits for its whole data; what follows waits behind it', async () => {
    const before = create('Hello')
    const out = sink()
    const { calls, lookup } = deferred()
    const j = new LateJoin(out.next, lookup, () => {})
    j.begin(before.serial, false)
    const fresh = create('new')
    const a1 = append(before, ',')
    const a2 = append(before, ' world')
    const after = create('after')
    expect(j.push([fresh, a1])).toBe(true)
    j.push([a2, after])
    expect(out.flat()).toEqual([fresh])
    expect(calls.length).toBe(1)
    // the store already holds a2: the update covers it, a2 is not sent again
    calls[0]!.resolve({ entry: { ...a1, action: 1, data: 'Hello, world' }, through: a2.serial })
    await tick()
    expect(out.flat().map((x) => [x.action, x.data])).toEqual([
      [undefined, 'new'],
      [1, 'Hello, world'],
      [undefined, 'after'],
    ])
    // later appends go as they come, with no lookup
    const a3 = append(before, '!')
    j.push([a3])
    expect(out.flat().at(-1)).toBe(a3)
    expect(calls.length).toBe(1)
  })

  test('a whole change is a first delivery as it is; a resumed subscription is left alone', () => {
    const before = create('Hello')
    const out = sink()
    const { calls, lookup } = deferred()
    const j = new LateJoin(out.next, lookup, () => {})
    j.begin(before.serial, false)
    const u = change(before, 1, 'Bye')
    const a = append(before, '!')
    const batch = [u, a]
    j.push(batch)
    expect(out.batches[0]).toBe(batch)
    const resumed = new LateJoin(out.next, lookup, () => {})
    resumed.begin(before.serial, true)
    const b = [append(before, '?')]
    resumed.push(b)
    expect(out.batches[1]).toBe(b)
    expect(calls.length).toBe(0)
  })

  test('entries waiting past the bound pause the session; it is resumed once they have gone', async () => {
    const before = create('x')
    const out = sink()
    const { calls, lookup } = deferred()
    let resumed = 0
    const j = new LateJoin(out.next, lookup, () => resumed++)
    j.begin(before.serial, false)
    j.push([append(before, 'a')])
    let room = true
    for (let i = 0; i < 1100 && room; i++) room = j.push([create(String(i))])
    expect(room).toBe(false)
    calls[0]!.resolve(undefined) // forgotten: the append goes as it is
    await tick()
    expect(resumed).toBe(1)
    expect(out.flat()[0]!.data).toBe('a')
    expect(out.flat().length).toBe(1001)
  })
})

describe('ChannelHold', () => {
  test('batching: an interval of entries in order, whole changes superseding, batches of at most 200', () => {
    const timers = clock()
    const out = sink()
    const h = new ChannelHold('ch', { intervalMs: 20 }, { maxMessages: 10_000, maxBytes: 1 << 30 }, timers, out.next)
    const m = create('v0')
    const a = append(m, '+')
    const u = change(m, 1, 'v1')
    const p: Message = { id: 'p', serial: serial(), timestamp: 1, kind: 'presence', action: 2 }
    h.push([m, a])
    h.push([u, p])
    expect(out.batches.length).toBe(0)
    timers.advance(20)
    expect(out.flat()).toEqual([m, u, p])
    const many = Array.from({ length: 450 }, () => create())
    h.push(many)
    timers.advance(20)
    expect(out.batches.slice(1).map((b) => b.length)).toEqual([MAX_BATCH, MAX_BATCH, 50])
  })

  test('conflation: the latest message per key in order; appends and presence kept; bounds flush at once', () => {
    const timers = clock()
    const out = sink()
    const keyOf = compileKey("#{message.extras.headers['market']}")
    const h = new ChannelHold('ch', { intervalMs: 100, keyOf }, { maxMessages: 4, maxBytes: 1 << 30 }, timers, out.next)
    const mk = (market: string, v: string) => create(v, { extras: { headers: { market } } })
    const a1 = mk('A', '1')
    const b1 = mk('B', '1')
    const a2 = mk('A', '2')
    const app = append(b1, '!')
    h.push([a1, b1, a2, app])
    timers.advance(100)
    expect(out.flat()).toEqual([b1, a2, app])
    h.push(['C', 'D', 'E', 'F'].map((k) => mk(k, '0'))) // four held: the bound
    expect(out.batches.length).toBe(2)
  })
})

describe('conflation keys', () => {
  const m: Message = {
    id: 'id1',
    serial: 's',
    timestamp: 0,
    name: 'update',
    clientId: 'c1',
    extras: { headers: { market: 'm-A' } },
  }
  test('interpolation, headers, hash filters and tuples', () => {
    expect(compileKey('#{message.name}')(m, 'ch')).toBe('update')
    expect(compileKey("k-#{ message.extras.headers['market'] }-#{channelName}")(m, 'ch')).toBe('k-m-A-ch')
    expect(compileKey('#{message.extras.headers["none"]}#{message.id}')(m, 'ch')).toBe('id1')
    expect(compileKey('constant')(m, 'ch')).toBe('constant')
    expect(compileKey('#{channelName | hash}')(m, 'ch')).toMatch(/^[0-9a-f]+$/)
    expect(compileKey('#{channelName | hash(10)}')(m, 'ch')).toMatch(/^\d+$/)
    expect(Number(compileKey('#{message.id | moduloHash(4, 10)}')(m, 'ch'))).toBeLessThan(4)
    const tuple = compileKey('#{(message.name, message.clientId) | hash}')
    expect(tuple(m, 'a')).toBe(tuple(m, 'b'))
    expect(tuple({ ...m, clientId: 'c2' }, 'a')).not.toBe(tuple(m, 'a'))
  })
  test('what is not the syntax is 40000', () => {
    for (const bad of ['#{message.name', '#{message.data}', '#{channelName | md5}', '#{channelName | moduloHash}'])
      expect(() => compileKey(bad)).toThrow(expect.objectContaining({ code: 40000 }))
  })
})
