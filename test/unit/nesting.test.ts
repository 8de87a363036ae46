import { expect, test } from 'bun:test'
import { pack } from 'msgpackr'
import { jsonTooDeep, msgpackProblem } from '../../src/lib/nesting'

const nestedText = (levels: number) => '['.repeat(levels) + ']'.repeat(levels)
const nestedValue = (levels: number): unknown => (levels === 0 ? 1 : [nestedValue(levels - 1)])
const bytes = (...b: number[]) => new Uint8Array(b)

test('JSON: depth counts the brackets outside strings; a top-level container is level 1', () => {
  for (const n of [1, 5, 64]) expect(jsonTooDeep(nestedText(n), 64)).toBe(false)
  expect(jsonTooDeep(nestedText(65), 64)).toBe(true)
  expect(jsonTooDeep(JSON.stringify({ a: '['.repeat(100), b: '\\"[[[' }), 3)).toBe(false)
  expect(jsonTooDeep(JSON.stringify({ a: '['.repeat(100), b: [[[1]]] }), 3)).toBe(true)
  expect(jsonTooDeep(JSON.stringify({ a: '\\', b: [[1]] }), 3)).toBe(false)
  expect(jsonTooDeep(JSON.stringify({ a: '\\', b: [[[1]]] }), 3)).toBe(true)
  expect(jsonTooDeep(JSON.stringify([{}, {}, [[]], { a: [{ b: {} }] }]), 5)).toBe(false)
  expect(jsonTooDeep(JSON.stringify([{}, {}, [[]], { a: [{ b: {} }] }]), 4)).toBe(true)
  expect(jsonTooDeep('{"unterminated": "[[[[[[', 2)).toBe(false) // left to the parser
})

test('msgpack: depth counts arrays and maps (empty ones too) as JSON does', () => {
  for (const n of [1, 5, 64]) expect(msgpackProblem(pack(nestedValue(n)), 64)).toBeUndefined()
  expect(msgpackProblem(pack(nestedValue(65)), 64)).toBe('too deep')
  expect(msgpackProblem(pack({ d: { e: [[[]]] } }), 5)).toBeUndefined()
  expect(msgpackProblem(pack({ d: { e: [[[]]] } }), 4)).toBe('too deep')
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
  expect(msgpackProblem(pack(everything), 2)).toBeUndefined()
  expect(msgpackProblem(pack([everything]), 2)).toBe('too deep')
})

test('msgpack: extension types are refused, except the fixext 1 type 0 that clients write for undefined', () => {
  expect(msgpackProblem(pack({ a: undefined }), 4)).toBeUndefined()
  expect(msgpackProblem(bytes(0x91, 0xd4, 0x00, 0x00), 4)).toBeUndefined()
  expect(msgpackProblem(pack(new Date()), 4)).toBe('extension')
  expect(msgpackProblem(bytes(0x91, 0xd4, 0x72, 0x00), 4)).toBe('extension') // a record definition
  for (const t of [0xc7, 0xc8, 0xc9, 0xd5, 0xd6, 0xd7, 0xd8])
    expect(msgpackProblem(bytes(0x91, t, 1, 1, 1, 1, 1), 4)).toBe('extension')
})

test('msgpack: truncated or invalid bytes are left to the decoder', () => {
  expect(msgpackProblem(bytes(0xdc, 0xff), 4)).toBeUndefined()
  expect(msgpackProblem(bytes(0x92, 0x91), 1)).toBe('too deep')
  expect(msgpackProblem(bytes(0x91, 0xc1), 4)).toBeUndefined()
  expect(msgpackProblem(bytes(), 4)).toBeUndefined()
})
