import { describe, expect, test } from 'bun:test'
import { ringCodec } from '../../src/backend/shared/ring-codec'
import { Ring as CoreRing } from '../../src/backend/shared/ring'
import { allocatedBlocks, BLOCK } from '../../src/backend/shared/ring-blocks'
import { advanceSerial, formatSerial, parseSerial } from '../../src/core/model/serial'
import type { Message } from '../../src/core/types'
import { ID_ON_CONNECTION } from '../../src/core/model/ids'

/** The ring with the backends' codec. */
class Ring extends CoreRing {
  constructor(capacity: number, floor: string) {
    super(capacity, floor, ringCodec)
  }
}

const msg = (i: number, ts = 1000 + i): Message => ({ id: `m${i}`, serial: formatSerial(ts, 0), timestamp: ts })

describe('serials', () => {
  test('string order is numeric order', () => {
    expect(formatSerial(999, 10) < formatSerial(1000, 0)).toBe(true)
    expect(formatSerial(1000, 9) < formatSerial(1000, 10)).toBe(true)
    expect(parseSerial(formatSerial(1234, 56))).toEqual({ ms: 1234, seq: 56 })
  })
  test('never go backwards when the clock does', () => {
    const c = { lastMs: 1000, lastSeq: 3 }
    advanceSerial(c, 900)
    expect(c).toEqual({ lastMs: 1000, lastSeq: 4 })
    advanceSerial(c, 1000)
    expect(c).toEqual({ lastMs: 1000, lastSeq: 5 })
    advanceSerial(c, 1001)
    expect(c).toEqual({ lastMs: 1001, lastSeq: 0 })
  })
})

describe('Ring', () => {
  test('keeps the newest `capacity` messages in order', () => {
    const r = new Ring(4, '0')
    for (let i = 0; i < 10; i++) r.push(msg(i))
    expect(r.size).toBe(4)
    expect([0, 1, 2, 3].map((i) => r.at(i).id)).toEqual(['m6', 'm7', 'm8', 'm9'])
  })
  test('after() returns messages strictly after a serial', () => {
    const r = new Ring(8, '0')
    for (let i = 0; i < 6; i++) r.push(msg(i))
    expect(r.after(msg(2).serial).map((m) => m.id)).toEqual(['m3', 'm4', 'm5'])
    expect(r.after(msg(5).serial)).toEqual([])
  })
  test('query pages backwards and forwards with cursors and time bounds', () => {
    const r = new Ring(16, '0')
    for (let i = 0; i < 10; i++) r.push(msg(i))
    const back1 = r.query({ limit: 3, direction: 'backwards' }, 0)
    expect(back1.map((m) => m.id)).toEqual(['m9', 'm8', 'm7'])
    const back2 = r.query({ limit: 3, direction: 'backwards', cursor: back1[2]!.serial }, 0)
    expect(back2.map((m) => m.id)).toEqual(['m6', 'm5', 'm4'])
    const fwd = r.query({ limit: 3, direction: 'forwards', cursor: msg(4).serial }, 0)
    expect(fwd.map((m) => m.id)).toEqual(['m5', 'm6', 'm7'])
    expect(r.query({ limit: 100, direction: 'forwards', start: 1003, end: 1005 }, 0).map((m) => m.id)).toEqual([
      'm3',
      'm4',
      'm5',
    ])
    expect(r.query({ limit: 100, direction: 'forwards' }, 1008).map((m) => m.id)).toEqual(['m8', 'm9'])
  })
  test('expire drops old messages', () => {
    const r = new Ring(8, '0')
    for (let i = 0; i < 5; i++) r.push(msg(i))
    r.expire(1003)
    expect(r.oldest()!.id).toBe('m3')
    expect(r.size).toBe(2)
  })
})

describe('Ring floor', () => {
  test('rises to the newest serial dropped by overflow or expiry', () => {
    const r = new Ring(3, 'start')
    for (let i = 0; i < 3; i++) r.push(msg(i))
    expect(r.floor).toBe('start')
    r.push(msg(3))
    expect(r.floor).toBe(msg(0).serial)
    r.push(msg(4))
    expect(r.floor).toBe(msg(1).serial)
    r.expire(1004)
    expect(r.floor).toBe(msg(3).serial)
    expect(r.after(r.floor).map((m) => m.id)).toEqual(['m4'])
  })
})

describe('Ring storage', () => {
  test('a message reads back with every field as published, binary data included', () => {
    const r = new Ring(4, '0')
    const m: Message = {
      id: 'x:0',
      serial: formatSerial(5000, 7),
      timestamp: 5000,
      name: 'n',
      data: new Uint8Array([0, 1, 255]),
      encoding: 'cipher',
      clientId: 'c',
      connectionId: 'k',
      extras: { headers: { a: 'b' }, n: [1, null, true] },
      action: 1,
    }
    r.push(m)
    r.push({ id: 'y:0', serial: formatSerial(5001, 0), timestamp: 5001 })
    expect(r.at(0)).toEqual(m)
    expect(r.at(1)).toEqual({ id: 'y:0', serial: formatSerial(5001, 0), timestamp: 5001 })
    expect(Object.keys(r.at(1)).sort()).toEqual(['id', 'serial', 'timestamp'])
  })

  test('the ids of a realtime publish, carried as numbers, are kept as numbers and read back as the ids', () => {
    const r = new Ring(8, '0')
    const kept: number[] = []
    const cases: Array<[number, number]> = [
      [0, 0],
      [7, 3],
      [2 ** 32 - 1, 2 ** 16 - 1],
      [123_456_789, 1000],
    ]
    for (const [i, [msgSerial, index]] of cases.entries()) {
      const m = {
        id: `conn-Ab9:${msgSerial}:${index}`,
        serial: formatSerial(6000 + i, 0),
        timestamp: 6000 + i,
        name: 'n',
        connectionId: 'conn-Ab9',
        [ID_ON_CONNECTION]: msgSerial * 2 ** 16 + index,
      } as Message
      const before = r.byteSize
      r.push(m)
      kept.push(r.byteSize - before)
      const back = r.at(r.size - 1)
      expect(back.id).toBe(`conn-Ab9:${msgSerial}:${index}`)
      expect(Object.keys(back)).toEqual(['id', 'name', 'connectionId', 'serial', 'timestamp'])
      expect(Object.getOwnPropertySymbols(back)).toEqual([])
    }
    // six bytes for the id, not its characters: the same message without the numbers takes more
    const plain: Message = {
      id: 'conn-Ab9:7:3',
      serial: formatSerial(7000, 0),
      timestamp: 7000,
      name: 'n',
      connectionId: 'conn-Ab9',
    }
    const before = r.byteSize
    r.push(plain)
    expect(r.byteSize - before).toBe(kept[1]! + 'conn-Ab9:7:3'.length + 4 - 6)
    expect(r.at(r.size - 1)).toEqual(plain)
  })

  test('text beyond ASCII, empty strings, an action above 255 and binary inside extras read back unchanged', () => {
    const r = new Ring(4, '0')
    const m: Message = {
      id: 'ïd:0',
      serial: formatSerial(5000, 0),
      timestamp: 5000,
      name: '',
      data: 'é€😀 mixed ascii then 日本語',
      clientId: 'ünï',
      extras: { bin: new Uint8Array([7, 8]) },
      action: 300,
    }
    r.push(m)
    r.push({ id: 'e', serial: formatSerial(5001, 0), timestamp: 5001, data: '' })
    expect(r.at(0)).toEqual(m)
    expect(r.at(1).data).toBe('')
    // four bytes hold any action up to 2^32 - 1 (2^31 and above read back negative once)
    r.push({ id: 'a', serial: formatSerial(5002, 0), timestamp: 5002, action: 2 ** 32 - 1 })
    expect(r.at(2).action).toBe(2 ** 32 - 1)
  })

  test('a change entry reads back with its kind, action and mutation; history skips it', () => {
    const r = new Ring(8, '0')
    const original: Message = { id: 'o:0', serial: formatSerial(5000, 0), timestamp: 5000, name: 'n', data: 'a' }
    const change: Message = {
      id: 'o:0',
      serial: formatSerial(5002, 0),
      timestamp: 5002,
      kind: 'mutation',
      action: 5,
      name: 'n',
      data: new Uint8Array([1, 2]),
      clientId: 'publisher',
      connectionId: 'conn',
      extras: { headers: { h: 1 } },
      mutation: {
        serial: original.serial,
        timestamp: 5000,
        clientId: 'editor',
        description: 'ünïcode',
        metadata: { nested: { bin: new Uint8Array([9]) } },
      },
    }
    r.push(original)
    r.push(change)
    r.push({
      id: 'p:0',
      serial: formatSerial(5003, 0),
      timestamp: 5003,
      kind: 'mutation',
      action: 2,
      mutation: { serial: original.serial, timestamp: 5000 },
    })
    expect(r.at(1)).toEqual(change)
    expect(r.at(2).mutation).toEqual({ serial: original.serial, timestamp: 5000 })
    expect(r.query({ limit: 10, direction: 'forwards' }, 0).map((m) => m.id)).toEqual(['o:0'])
    expect(r.query({ limit: 10, direction: 'forwards', entries: 'all' }, 0)).toHaveLength(3)
  })

  test('thousands of pushes of varied sizes fill, take and give back blocks without corrupting a message', () => {
    const r = new Ring(50, '0')
    const expected: Message[] = []
    let seed = 7
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
    for (let i = 0; i < 5000; i++) {
      const size = rand() < 0.05 ? 20_000 : Math.floor(rand() * 300)
      const data = i % 3 ? `m${i}-` + 'x'.repeat(size) : new Uint8Array(size).fill(i % 251)
      const m: Message = { id: `m${i}`, serial: formatSerial(10_000 + i, i % 4), timestamp: 10_000 + i, data }
      r.push(m)
      expected.push(m)
      if (i % 97 === 0) expect(r.after(formatSerial(0, 0))).toEqual(expected.slice(-50))
      if (i === 4000) {
        r.expire(10_000 + i - 9) // a partly emptied ring keeps working
        expected.splice(0, expected.length - 10)
        expect(r.size).toBe(10)
      }
    }
    expect(r.after(formatSerial(0, 0))).toEqual(expected.slice(-50))
    expect(r.floor).toBe(expected.at(-51)!.serial)
    expect(r.byteSize).toBeLessThan(50 * 20_100)
  })

  test('the index grows and shrinks while its entries wrap around its end, keeping every entry in order', () => {
    // a window policy: entries leave from the old end while the ring is still growing, so the
    // index is resized (both ways) with its live entries in two runs around the end
    const r = new CoreRing({ minCount: 4, windowMs: 40, maxBytes: Infinity }, '0', ringCodec)
    const slots = () => (r as unknown as { slots: number }).slots
    const kept: Message[] = []
    let resized = 0
    for (let i = 0; i < 3000; i++) {
      // bursts (many per ms) then lulls: the window holds from a few entries to a few hundred
      const t = 1000 + Math.floor(i / (i % 1000 < 500 ? 10 : 1))
      const m: Message = { id: `w${i}`, serial: formatSerial(t, i), timestamp: t, data: `d${i}` }
      const before = slots()
      r.push(m)
      kept.push(m)
      while (kept.length > 4 && kept[0]!.timestamp <= t - 40) kept.shift()
      if (i % 50 === 0) {
        r.expire(t - 30) // shrinks the index once few entries are left
        while (kept.length && kept[0]!.timestamp < t - 30) kept.shift()
      }
      if (slots() !== before) resized++
      if (i % 7 === 0) expect(r.after(formatSerial(0, 0)).map((e) => e.id)).toEqual(kept.map((e) => e.id))
    }
    expect(resized).toBeGreaterThan(4)
  })

  test('entries are written once and never move; a ring that keeps its size takes its blocks from the pool', () => {
    const r = new Ring(200, '0')
    const inside = r as unknown as { blocks: Uint8Array[]; u: Uint32Array; head: number; slots: number }
    // where the k-th entry lies: its block (the one holding its bytes) and its offset there
    const whereOf = (k: number) => {
      const s = ((inside.head + k) % inside.slots) * 8
      return { block: inside.u[s + 7]! >>> 3, offset: inside.u[s + 5]! }
    }
    const m = (i: number) => ({
      id: `m${i}`,
      serial: formatSerial(1 + i, 0),
      timestamp: 1 + i,
      data: 'x'.repeat(1000 + (i % 50)),
    })
    for (let i = 0; i < 1000; i++) r.push(m(i)) // grown to its size: ~200 kB, in full blocks
    const allocated = allocatedBlocks()
    const seen = new Map<string, { block: number; offset: number }>()
    const blocks = new Set<Uint8Array>()
    for (let i = 1000; i < 6000; i++) {
      r.push(m(i))
      seen.set(`m${i}`, whereOf(r.size - 1))
      for (const b of inside.blocks) blocks.add(b)
      if (i % 37 === 0)
        for (let k = 0; k < r.size; k++) {
          const at = seen.get(r.at(k).id)
          if (at !== undefined) expect(whereOf(k)).toEqual(at)
        }
    }
    // 5,000 pushes of ~1 kB wrote ~80 blocks' worth: the same few blocks, given back and taken again
    expect(blocks.size).toBeLessThan(10)
    expect(allocatedBlocks()).toBe(allocated)
    expect(r.after('0').map((e) => e.id)).toEqual(Array.from({ length: 200 }, (_, k) => `m${5800 + k}`))
  })

  test('an entry larger than a block is held in a block of its size', () => {
    const r = new Ring(4, '0')
    const big = 'é'.repeat(BLOCK) // two bytes a unit: its encoding may take three
    r.push({ id: 'big', serial: formatSerial(1, 0), timestamp: 1, data: big })
    expect(r.blockBytes).toBeLessThan(2 * BLOCK + 100) // not the 3 * BLOCK reserved for writing it
    r.push({ id: 'small', serial: formatSerial(2, 0), timestamp: 2, data: 'tiny' })
    expect(r.at(0).data).toBe(big)
    expect(r.at(1).data).toBe('tiny')
  })

  test('random sizes, a window, expiry and shedding: every entry reads back in order and byteSize is the bytes held', () => {
    const r = new CoreRing({ minCount: 8, windowMs: 30, maxBytes: 200_000 }, '0', ringCodec)
    const scratch = Buffer.alloc(200_000)
    const encoded = (e: Message) => {
      ringCodec.maxSize(e)
      return ringCodec.write(e, scratch, 0)
    }
    let kept: Message[] = []
    let seed = 11
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
    for (let i = 0; i < 8000; i++) {
      const t = 1000 + Math.floor(i / 5)
      const size = rand() < 0.02 ? 30_000 : Math.floor(rand() * 400)
      const e: Message = { id: `r${i}`, serial: formatSerial(t, i), timestamp: t, data: 'y'.repeat(size) }
      r.push(e)
      kept.push(e)
      // the policy: beyond 8 entries, those within 30 ms of the newest; never over 200,000 bytes
      while (kept.length > 1) {
        const bytes = kept.reduce((n, k) => n + encoded(k), 0)
        if (!((kept.length > 8 && kept[0]!.timestamp <= t - 30) || bytes > 200_000)) break
        kept.shift()
      }
      if (i % 500 === 250) {
        r.expire(t - 10)
        kept = kept.filter((k) => k.timestamp >= t - 10)
      }
      if (i % 700 === 350) {
        r.shed()
        kept = kept.slice(-8)
      }
      if (i % 13 === 0) {
        expect(r.after('0').map((k) => k.id)).toEqual(kept.map((k) => k.id))
        expect(r.byteSize).toBe(kept.reduce((n, k) => n + encoded(k), 0))
      }
    }
    expect(r.after('0')).toEqual(kept)
  })

  test('binary data read from the ring stays intact after the ring moves on', () => {
    const r = new Ring(2, '0')
    r.push({ id: 'a', serial: formatSerial(1, 0), timestamp: 1, data: new Uint8Array([1, 2, 3]) })
    const read = r.at(0).data as Uint8Array
    for (let i = 1; i < 200; i++)
      r.push({ id: `b${i}`, serial: formatSerial(1 + i, 0), timestamp: 1 + i, data: new Uint8Array(500).fill(9) })
    expect([...read]).toEqual([1, 2, 3])
  })

  test('the index grows with what the ring holds, and an emptied ring gives its large buffers back', () => {
    const r = new Ring(100, '0')
    expect((r as unknown as { slots: number }).slots).toBe(16)
    for (let i = 0; i < 100; i++)
      r.push({ id: `m${i}`, serial: formatSerial(1 + i, 0), timestamp: 1 + i, data: 'x'.repeat(10_000) })
    expect(r.byteSize).toBeGreaterThan(1_000_000)
    r.expire(1000)
    expect(r.byteSize).toBe(0)
    expect(r.blockBytes).toBe(0)
    r.push({ id: 'small', serial: formatSerial(2000, 0), timestamp: 2000, data: 'tiny' })
    expect(r.blockBytes).toBeLessThan(1000)
    expect((r as unknown as { slots: number }).slots).toBe(16)
    expect(r.at(0).data).toBe('tiny')
  })
})

describe('Ring codec', () => {
  test('binary data read from the ring is a copy: the ring writing over its bytes later leaves it as it was', () => {
    const r = new Ring(2, '0')
    r.push({ ...msg(0), data: new Uint8Array([1, 2, 3, 4]) })
    const read = r.at(0).data as Uint8Array
    // the ring wraps: newer entries are written where the first one was
    for (let i = 1; i < 50; i++) r.push({ ...msg(i), data: new Uint8Array(4).fill(9) })
    expect([...read]).toEqual([1, 2, 3, 4])
    expect(read.constructor).toBe(Uint8Array)
  })
})

describe('Ring codec strings', () => {
  test('short and long, ASCII and not: every string field reads back as written', () => {
    const r = new Ring(10, '0')
    const texts = [
      '',
      'a',
      'é',
      '日本語',
      'x'.repeat(32),
      'y'.repeat(33),
      `${'z'.repeat(31)}é`,
      '\u{1F600}',
      '\u007f\u0080',
    ]
    texts.forEach((t, i) =>
      r.push({ ...msg(i), id: `${t}:${i}`, name: t, data: t, clientId: t, connectionId: t, encoding: t }),
    )
    texts.forEach((t, i) => {
      const m = r.at(i)
      expect([m.id, m.name, m.data, m.clientId, m.connectionId, m.encoding]).toEqual([`${t}:${i}`, t, t, t, t, t])
    })
  })
})
