import { describe, expect, test } from 'bun:test'
import { latin1Slice, utf8Slice, utf8Text, writeAscii } from '../../src/lib/encoding'

/** The text readers against TextDecoder, the reference, on short and long, valid and damaged input. */
describe('lib/encoding text readers', () => {
  const decoder = new TextDecoder()
  const framed = (s: string) => {
    const inner = new TextEncoder().encode(s)
    const b = new Uint8Array(inner.length + 6)
    b.set(inner, 3)
    return { b, start: 3, end: 3 + inner.length }
  }
  const samples = ['', 'a', 'bench', 'abcdefg', 'abcdefgh', 'ünï', 'é', '😀', 'x'.repeat(100), `${'z'.repeat(31)}é`]

  test('utf8Text and utf8Slice read a range as TextDecoder reads it', () => {
    for (const s of samples) {
      const { b, start, end } = framed(s)
      expect(utf8Text(b, start, end)).toBe(s)
      expect(utf8Slice(b, start, end)).toBe(s)
      expect(utf8Text(b, start, end)).toBe(decoder.decode(b.subarray(start, end)))
    }
  })

  test('invalid UTF-8 reads as U+FFFD, short or long', () => {
    for (const bytes of [[0x61, 0xff], [0xc3], [0x61, 0x62, 0xe2, 0x82], [...Array(20).fill(0x61), 0xc0, 0x80]]) {
      const b = Uint8Array.from(bytes)
      expect(utf8Text(b, 0, b.length)).toBe(decoder.decode(b))
      expect(utf8Text(b, 0, b.length)).toContain('\ufffd')
    }
  })

  test('latin1Slice gives one character per byte', () => {
    const b = Uint8Array.from([0x41, 0xe9, 0xff, 0x00])
    expect(latin1Slice(b, 0, 4)).toBe('A\u00e9\u00ff\u0000')
    expect(latin1Slice(b, 1, 2)).toBe('\u00e9')
  })

  test('writeAscii copies ASCII by code unit and refuses anything else', () => {
    const t = new Uint8Array(8)
    expect(writeAscii(t, 2, 'abc')).toBe(true)
    expect([...t.subarray(2, 5)]).toEqual([0x61, 0x62, 0x63])
    expect(writeAscii(t, 0, 'aé')).toBe(false)
  })
})
