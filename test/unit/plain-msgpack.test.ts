import { describe, expect, test } from 'bun:test'
import { Packr } from 'msgpackr'
import { NotPlainMsgpack, plainMsgpack } from '../../src/api/wire/msgpack'

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
