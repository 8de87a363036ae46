import { describe, expect, test } from 'bun:test'
import { decode } from '@ably/vcdiff-decoder'
import { vcdiffEncode } from '../../src/lib/vcdiff'
import { rng } from '../../bench/lib/delta-payloads'

/**
 * The encoder checked against the hosted service's clients' decoder (`@ably/vcdiff-decoder`, the
 * one ably-js takes as `plugins.vcdiff`): every delta decodes to its target, and is never larger
 * than the target plus a small bound.
 */
const enc = new TextEncoder()
const bytes = (s: string) => enc.encode(s)
/** Headers of a delta that adds everything: magic, indicators, lengths (at most 5 bytes each at 64 KiB). */
const BOUND = 32

const randomBytes = (r: () => number, n: number) => Uint8Array.from({ length: n }, () => Math.floor(r() * 256))

function roundTrip(source: Uint8Array, target: Uint8Array): Uint8Array {
  const delta = vcdiffEncode(source, target)!
  expect(delta).toBeInstanceOf(Uint8Array)
  const out = decode(delta, source)
  expect(Buffer.from(out).equals(Buffer.from(target))).toBe(true)
  expect(delta.length).toBeLessThanOrEqual(target.length + BOUND)
  return delta
}

describe('vcdiff encoder against @ably/vcdiff-decoder', () => {
  test('empty, identical and unrelated inputs', () => {
    const r = rng(1)
    const a = randomBytes(r, 1000)
    const b = randomBytes(r, 1000)
    roundTrip(new Uint8Array(0), new Uint8Array(0))
    roundTrip(a, new Uint8Array(0))
    roundTrip(new Uint8Array(0), a)
    expect(roundTrip(a, a).length).toBeLessThan(24) // one COPY of everything
    roundTrip(a, b)
    roundTrip(bytes('abc'), bytes('abcd'))
    roundTrip(bytes('x'), bytes('y'))
  })

  test('the client test data: small JSON objects with one field changed give small deltas', () => {
    const data = [
      { foo: 'bar', count: 1, status: 'active' },
      { foo: 'bar', count: 2, status: 'active' },
      { foo: 'bar', count: 2, status: 'inactive' },
      { foo: 'bar', count: 3, status: 'inactive' },
      { foo: 'bar', count: 3, status: 'active' },
    ].map((o) => bytes(JSON.stringify(o)))
    for (let i = 1; i < data.length; i++) {
      const d = roundTrip(data[i - 1]!, data[i]!)
      expect(d.length).toBeLessThan(data[i]!.length * 0.75)
    }
  })

  test('64 KiB: a JSON state with a few fields changed, a growing text, runs, binary', () => {
    const r = rng(7)
    const state: Record<string, unknown> = {}
    for (let k = 0; k < 2500; k++) state[`field${k}`] = Math.floor(r() * 1e6)
    const before = bytes(JSON.stringify(state))
    for (let k = 0; k < 5; k++) state[`field${Math.floor(r() * 2500)}`] = Math.floor(r() * 1e9)
    const after = bytes(JSON.stringify(state))
    expect(before.length).toBeGreaterThan(30_000)
    expect(roundTrip(before, after).length).toBeLessThan(200)

    const text = 'lorem ipsum dolor sit amet '.repeat(2400).slice(0, 64 * 1024 - 100)
    expect(roundTrip(bytes(text), bytes(text + ' and then some more words')).length).toBeLessThan(60)
    expect(roundTrip(bytes('prefix ' + text), bytes(text)).length).toBeLessThan(40)

    const zeros = new Uint8Array(64 * 1024)
    expect(roundTrip(randomBytes(r, 64 * 1024), zeros).length).toBeLessThan(30) // a run, copied from itself
    const bin = randomBytes(r, 64 * 1024)
    const edited = bin.slice()
    for (let k = 0; k < 20; k++) edited[Math.floor(r() * edited.length)] = Math.floor(r() * 256)
    expect(roundTrip(bin, edited).length).toBeLessThan(400)
    roundTrip(bin, randomBytes(r, 64 * 1024))
  })

  test('random edits of random inputs, 300 cases', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const r = rng(seed)
      // small alphabets make many false candidates and overlapping repeats
      const alphabet = 1 + Math.floor(r() * 255)
      const n = Math.floor(r() * (seed % 10 === 0 ? 20000 : 600))
      const source = Uint8Array.from({ length: n }, () => Math.floor(r() * alphabet))
      const parts: number[] = []
      let p = 0
      while (p < source.length || parts.length < 3) {
        const op = r()
        if (op < 0.6 && p < source.length) {
          const len = Math.floor(r() * 50)
          parts.push(...source.subarray(p, p + len))
          p += len
        } else if (op < 0.8) {
          const len = Math.floor(r() * 20)
          for (let k = 0; k < len; k++) parts.push(Math.floor(r() * alphabet))
        } else p += Math.floor(r() * 20)
        if (parts.length > 40000) break
      }
      try {
        roundTrip(source, Uint8Array.from(parts))
      } catch (e) {
        throw new Error(`seed ${seed}: ${(e as Error).message}`)
      }
    }
  })

  test('maxSize: undefined when the delta would be larger, the delta when it is not', () => {
    const r = rng(3)
    const a = randomBytes(r, 2000)
    const b = randomBytes(r, 2000)
    expect(vcdiffEncode(a, b, 1500)).toBeUndefined()
    const d = vcdiffEncode(a, a, 1500)!
    expect(Buffer.from(decode(d, a)).equals(Buffer.from(a))).toBe(true)
    const exact = vcdiffEncode(a, b)!
    expect(vcdiffEncode(a, b, exact.length)).toEqual(exact)
    expect(vcdiffEncode(a, b, exact.length - 1)).toBeUndefined()
  })
})
