import { describe, expect, test } from 'bun:test'
import {
  CapabilityMatcher,
  canonicalCapability,
  intersectCapability,
  parseCapability,
  resourceMatches,
} from '../../src/core/auth/capability'
import { GatewayError } from '../../src/errors'

describe('resource patterns', () => {
  test.each([
    ['*', 'foo', true],
    ['*', 'foo:bar', true],
    ['*', '[meta]log', false],
    ['[*]*', '[meta]log', true],
    ['ns:*', 'ns:a', true],
    ['ns:*', 'ns:a:b', true],
    ['ns:*', 'ns', false],
    ['ns:*', 'other:a', false],
    ['foo:*:baz', 'foo:bar:baz', true],
    ['foo:*:baz', 'foo:bar:qux', false],
    ['foo:*:baz', 'foo:bar:baz:x', false],
    ['foo*', 'foo', false],
    ['foo*', 'foo*', true],
    ['foo', 'foo', true],
    ['foo', 'foobar', false],
  ])('%s matches %s: %p', (pattern, name, expected) => {
    expect(resourceMatches(pattern, name)).toBe(expected)
  })
})

describe('parseCapability', () => {
  test('accepts a JSON string and an object', () => {
    expect(parseCapability('{"a":["publish"]}')).toEqual({ a: ['publish'] })
    expect(parseCapability({ '*': ['*'] })).toEqual({ '*': ['*'] })
  })
  test.each([
    ['not json', '{a'],
    ['unknown op', '{"a":["publish_"]}'],
    ['star mixed with ops', '{"a":["*","publish"]}'],
    ['empty op list', '{"a":[]}'],
    ['not an object', '["a"]'],
    ['no resources', '{}'],
  ])('rejects %s with 400', (_why, input) => {
    let err: unknown
    try {
      parseCapability(input)
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(GatewayError)
    expect((err as GatewayError).statusCode).toBe(400)
  })
})

describe('intersectCapability', () => {
  test('narrows operations to the key', () => {
    expect(intersectCapability({ '*': ['publish', 'subscribe'] }, { foo: ['*'] })).toEqual({
      foo: ['publish', 'subscribe'],
    })
  })
  test('narrows a broad request to the key resource', () => {
    expect(intersectCapability({ 'ns:*': ['subscribe'] }, { '*': ['subscribe', 'publish'] })).toEqual({
      'ns:*': ['subscribe'],
    })
  })
  test('empty intersection is undefined', () => {
    expect(intersectCapability({ foo: ['publish'] }, { bar: ['publish'] })).toBeUndefined()
    expect(intersectCapability({ foo: ['publish'] }, { foo: ['subscribe'] })).toBeUndefined()
  })
  test('canonical form sorts resources and operations', () => {
    expect(canonicalCapability({ b: ['subscribe', 'publish'], a: ['history'] })).toBe(
      '{"a":["history"],"b":["publish","subscribe"]}',
    )
  })
})

describe('CapabilityMatcher', () => {
  const m = new CapabilityMatcher({ 'chat:*': ['publish'], room1: ['subscribe', 'history'] })
  test('checks operation and resource together', () => {
    expect(m.allows('chat:lobby', 'publish')).toBe(true)
    expect(m.allows('chat:lobby', 'subscribe')).toBe(false)
    expect(m.allows('room1', 'history')).toBe(true)
    expect(m.allows('room2', 'history')).toBe(false)
  })
  test('sub-channels are authorised as their base name', () => {
    expect(m.allows('room1::$chat', 'subscribe')).toBe(true)
    expect(m.allows('room2::$chat', 'subscribe')).toBe(false)
  })
})
