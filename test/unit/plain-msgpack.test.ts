import { describe, expect, test } from 'bun:test'
import { Packr, Unpackr } from 'msgpackr'
import { NotPlainMsgpack, plainMsgpack } from '../../src/lib/plain-msgpack'

const packr = new Packr({ useRecords: false })
const pack = (v: unknown) => new Uint8Array(packr.pack(v))

describe('plainMsgpack (request bodies, realtime frames)', () => {
  test('binary values of consecutive decodes are each their own bytes, as Uint8Arrays', () => {
    const first = plainMsgpack(pack({ data: new Uint8Array([1, 2, 3]) }), 64) as { data: Uint8Array }
    const second = plainMsgpack(pack({ data: new Uint8Array([9, 9, 9, 9]) }), 64) as { data: Uint8Array }
    expect([...first.data]).toEqual([1, 2, 3])
    expect([...second.data]).toEqual([9, 9, 9, 9])
    expect(first.data.constructor).toBe(Uint8Array)
    expect(first.data.buffer).not.toBe(second.data.buffer)
  })

  test('the caller keeps its bytes: nothing is written to them or hung on them', () => {
    const bytes = pack({ action: 15, channel: 'c', messages: [{ data: new Uint8Array([7]) }] })
    const copy = bytes.slice()
    plainMsgpack(bytes, 64)
    plainMsgpack(pack({ other: 'x'.repeat(100) }), 64)
    expect(bytes).toEqual(copy)
    expect(Object.keys(bytes as object).filter((k) => !/^\d+$/.test(k))).toEqual([])
  })

  test('a value decodes as msgpackr decodes it, below and above the reused buffer', () => {
    for (const size of [10, 70_000]) {
      const value = {
        action: 15,
        text: `ünïcødé ${'y'.repeat(size)}`,
        n: [0, -1, 2 ** 40, 1.5, null, true],
        nested: { a: [{ b: 'c' }] },
        bin: new Uint8Array(size).fill(5),
      }
      const decoded = plainMsgpack(pack(value), 64) as typeof value
      expect(decoded).toEqual(value)
    }
  })

  test('what is not one plain value is refused with the reason, and the next decode is unaffected', () => {
    const one = pack({ a: 1 })
    const trailing = new Uint8Array([...one, 0xc0])
    const why = (bytes: Uint8Array, depth = 64) => {
      const r = plainMsgpack(bytes, depth)
      return r instanceof NotPlainMsgpack ? r.problem : 'value'
    }
    expect(why(trailing)).toBe('malformed')
    expect(why(one.subarray(0, one.length - 1))).toBe('malformed')
    expect(why(pack([[[[1]]]]), 2)).toBe('too deep')
    expect(why(new Uint8Array([0xd4, 0x01, 0x00]))).toBe('extension')
    expect(plainMsgpack(one, 64)).toEqual({ a: 1 })
  })
})

/** A small seeded generator: the same values every run. */
function random(seed: number) {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32
  }
}

/** A random plain value: every msgpack type the reader takes, nested up to `depth`. */
function plainValue(r: () => number, depth: number): unknown {
  const pick = Math.floor(r() * (depth > 0 ? 14 : 11))
  const int = (bits: number) => Math.floor((r() - 0.5) * 2 ** bits)
  switch (pick) {
    case 0:
      return int(8)
    case 1:
      return int(17)
    case 2:
      return int(33)
    case 3:
      return int(53)
    case 4:
      return (r() - 0.5) * 1e6
    case 5:
      return r() < 0.5 ? null : r() < 0.5
    case 6:
      return 'abcdefghijklmnopqrstuvwxyz0123456789'.slice(0, Math.floor(r() * 36))
    case 7:
      return 'é日本-\u{1F600}x'.repeat(Math.floor(r() * 20))
    case 8:
      return 'y'.repeat(Math.floor(r() * 400))
    case 9:
      return new Uint8Array(Math.floor(r() * 40)).map(() => Math.floor(r() * 256))
    case 10:
      return undefined
    case 11:
    case 12: {
      const o: Record<string, unknown> = {}
      const n = Math.floor(r() * (r() < 0.1 ? 20 : 6))
      for (let i = 0; i < n; i++)
        o[['action', 'channel', 'data', 'name', `k${i}`, 'ké', 'x'.repeat(30)][i % 7]!] = plainValue(r, depth - 1)
      return o
    }
    default:
      return Array.from({ length: Math.floor(r() * (r() < 0.1 ? 20 : 5)) }, () => plainValue(r, depth - 1))
  }
}

const problem = (bytes: Uint8Array, depth = 64) => {
  const r = plainMsgpack(bytes, depth)
  return r instanceof NotPlainMsgpack ? r.problem : undefined
}
const nestedValue = (levels: number): unknown => (levels === 0 ? 1 : [nestedValue(levels - 1)])
const bytes = (...b: number[]) => new Uint8Array(b)

describe('plainMsgpack: what it refuses', () => {
  test('depth counts arrays and maps (empty ones too) as JSON does; a top-level container is level 1', () => {
    for (const n of [1, 5, 64]) expect(problem(pack(nestedValue(n)), 64)).toBeUndefined()
    expect(problem(pack(nestedValue(65)), 64)).toBe('too deep')
    expect(problem(pack({ d: { e: [[[]]] } }), 5)).toBeUndefined()
    expect(problem(pack({ d: { e: [[[]]] } }), 4)).toBe('too deep')
    const everything = {
      str: 'x'.repeat(70_000),
      mid: 'y'.repeat(300), // str 16
      short: 'abc',
      bin: new Uint8Array(70_000),
      bin16: new Uint8Array(300),
      list16: Array.from({ length: 300 }, (_, i) => i), // array 16
      nums: [0, 1, 127, 128, 65_536, 2 ** 40, -1, -200, -70_000, -(2 ** 40), 1.5],
      flags: [true, false, null],
      map: Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`k${i}`, i])),
      list: Array.from({ length: 70_000 }, (_, i) => i),
    }
    expect(plainMsgpack(pack(everything), 2)).toEqual(everything)
    expect(problem(pack([everything]), 2)).toBe('too deep')
  })

  test('extension types are refused, except the fixext 1 type 0 that clients write for undefined', () => {
    expect(plainMsgpack(pack({ a: undefined }), 4)).toEqual({ a: undefined })
    expect(plainMsgpack(bytes(0x91, 0xd4, 0x00, 0x00), 4)).toEqual([undefined])
    expect(problem(pack(new Date()), 4)).toBe('extension')
    expect(problem(bytes(0x91, 0xd4, 0x72, 0x00), 4)).toBe('extension') // a record definition
    for (const t of [0xc7, 0xc8, 0xc9, 0xd5, 0xd6, 0xd7, 0xd8])
      expect(problem(bytes(0x91, t, 1, 1, 1, 1, 1), 4)).toBe('extension')
  })

  test('NaN and infinite floats only where the caller asks for finite numbers (JSON bodies cannot hold them)', () => {
    for (const v of [NaN, Infinity, -Infinity]) {
      expect(Object.is(plainMsgpack(pack(v), 4), v)).toBe(true)
      expect(plainMsgpack(pack({ a: [v] }), 4, true)).toBeInstanceOf(NotPlainMsgpack)
    }
    const float32 = bytes(0xca, 0x7f, 0x80, 0x00, 0x00) // +Infinity in 32 bits
    expect(plainMsgpack(float32, 4)).toBe(Infinity)
    expect(problem(float32)).toBeUndefined()
    expect((plainMsgpack(float32, 4, true) as NotPlainMsgpack).problem).toBe('not finite')
  })

  test('truncated, unused and trailing bytes, lengths beyond the bytes, and keys that are not scalars', () => {
    expect(problem(bytes(0xdc, 0xff))).toBe('malformed')
    expect(problem(bytes(0xdd, 0xff, 0xff, 0xff, 0xff, 0x01))).toBe('malformed') // 4G elements claimed
    expect(problem(bytes(0xdf, 0xff, 0xff, 0xff, 0xff, 0x01))).toBe('malformed')
    expect(problem(bytes(0x91, 0x91, 0x01), 1)).toBe('too deep')
    expect(problem(bytes(0x92, 0x91))).toBe('malformed')
    expect(problem(bytes(0x91, 0xc1))).toBe('malformed')
    expect(problem(bytes())).toBe('malformed')
    expect(problem(bytes(0x81, 0x91, 0x01, 0x02))).toBe('malformed') // an array as a key
    expect(plainMsgpack(bytes(0x82, 0x01, 0xa1, 0x62, 0xc0, 0xc3), 4)).toEqual({ '1': 'b', null: true })
  })

  test('a key that names the prototype does not set it', () => {
    const v = plainMsgpack(pack(JSON.parse('{"__proto__": {"polluted": true}, "a": 1}')), 4) as Record<string, unknown>
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype)
    expect(v.__proto_).toEqual({ polluted: true })
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })
})

describe('plainMsgpack against msgpackr', () => {
  const reference = new Unpackr({ int64AsType: 'number', useRecords: false, mapsAsObjects: true, copyBuffers: true })

  test('random plain values decode as msgpackr decodes them', () => {
    const r = random(44)
    for (let i = 0; i < 3000; i++) {
      const bytes = pack(plainValue(r, 4))
      const mine = plainMsgpack(bytes, 64)
      expect(mine).not.toBeInstanceOf(NotPlainMsgpack)
      expect(mine).toStrictEqual(reference.unpack(bytes))
    }
  })

  test('short strings, which come from a cache, are each their own bytes: alike ends, lengths at the bound, non-ASCII, invalid bytes', () => {
    const strings: Array<string | Uint8Array> = []
    // names that share their length and ends (the cache's hash), and lengths around its bound (24 bytes)
    for (let i = 0; i < 2000; i++) strings.push(`room-${i}`, `r${i}m-0`, `${'a'.repeat(i % 30)}${i % 7}`)
    strings.push('', 'é', 'ab€', 'x'.repeat(24), 'x'.repeat(25), 'é'.repeat(12), '😀a')
    // bytes that are not UTF-8: each decoded as the reference decodes them, never as a cached string
    for (const b of [0x80, 0xc3, 0xff]) strings.push(new Uint8Array([0x61, b]), new Uint8Array([b, 0x61, 0x62]))
    const frameOf = (v: string | Uint8Array) => {
      if (typeof v === 'string') return pack({ channel: v, [v || 'k']: v })
      // a str8 value with the raw bytes (msgpackr would write valid UTF-8 only)
      return new Uint8Array([0x81, 0xa1, 0x6b, 0xd9, v.length, ...v])
    }
    // twice over, so that every string is read again after others took its cache slot
    for (let round = 0; round < 2; round++)
      for (const v of strings) {
        const bytes = frameOf(v)
        expect(plainMsgpack(bytes, 64)).toStrictEqual(reference.unpack(bytes))
      }
  })

  test('damaged bytes: refused, or the value msgpackr reads from them', () => {
    const r = random(7)
    let compared = 0
    for (let i = 0; i < 5000; i++) {
      const bytes = pack(plainValue(r, 3))
      // a byte changed, or the bytes cut short
      const damaged = r() < 0.5 ? bytes.slice(0, Math.floor(r() * bytes.length)) : bytes.slice()
      if (damaged.length === bytes.length && bytes.length)
        damaged[Math.floor(r() * bytes.length)] = Math.floor(r() * 256)
      const mine = plainMsgpack(damaged, 64)
      if (mine instanceof NotPlainMsgpack) continue
      compared++
      // an accepted value is the one msgpackr reads (it may fail where an extension or 0xc1 is: refused here)
      expect(mine).toStrictEqual(reference.unpack(damaged))
    }
    expect(compared).toBeGreaterThan(500)
  })
})
