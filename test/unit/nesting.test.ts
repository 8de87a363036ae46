import { expect, test } from 'bun:test'
import { jsonTooDeep } from '../../src/lib/nesting'

const nestedText = (levels: number) => '['.repeat(levels) + ']'.repeat(levels)

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
