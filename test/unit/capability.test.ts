import { describe, expect, test } from 'bun:test'
import {
  CapabilityMatcher,
  MAX_CAPABILITY_RESOURCES,
  MAX_INTERSECTION_STEPS,
  MAX_RESOURCE_LENGTH,
  MAX_WILDCARD_SEGMENTS,
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

describe('bounds', () => {
  const many = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`r${i}`, ['publish']]))
  const refusal = (f: () => unknown) => {
    try {
      f()
    } catch (e) {
      expect(e).toBeInstanceOf(GatewayError)
      expect((e as GatewayError).statusCode).toBe(400)
      return (e as GatewayError).message
    }
    throw new Error('accepted')
  }
  test('at most MAX_CAPABILITY_RESOURCES resources of at most MAX_RESOURCE_LENGTH characters', () => {
    expect(Object.keys(parseCapability(many(MAX_CAPABILITY_RESOURCES))).length).toBe(MAX_CAPABILITY_RESOURCES)
    expect(refusal(() => parseCapability(many(MAX_CAPABILITY_RESOURCES + 1)))).toContain('resources')
    expect(refusal(() => parseCapability(JSON.stringify(many(10_000))))).toContain('resources')
    expect(parseCapability({ ['x'.repeat(MAX_RESOURCE_LENGTH)]: ['*'] })).toBeDefined()
    expect(refusal(() => parseCapability({ ['x'.repeat(MAX_RESOURCE_LENGTH + 1)]: ['*'] }))).toContain('longer')
  })
  test('wildcard resources have at most MAX_WILDCARD_SEGMENTS segments in all', () => {
    // resources of 501 segments (999 characters of `*:*:...` and an index)
    const deep = (n: number) =>
      Object.fromEntries(Array.from({ length: n }, (_, i) => [`${Array(500).fill('*').join(':')}:${i}`, ['*']]))
    const fit = Math.floor(MAX_WILDCARD_SEGMENTS / 501)
    expect(Object.keys(parseCapability(deep(fit)))).toHaveLength(fit)
    expect(refusal(() => parseCapability(deep(fit + 1)))).toContain('segments')
    // exact names do not count
    expect(parseCapability(many(MAX_CAPABILITY_RESOURCES))).toBeDefined()
  })
  test('an intersection past MAX_INTERSECTION_STEPS is refused, not computed', () => {
    const bits = (i: number) => Array.from({ length: 64 }, (_, j) => ((i >> (j % 6)) & 1 ? '*' : 'a'))
    const key = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [[...bits(i), '*'].join(':'), ['publish']]))
    const requested = Object.fromEntries(
      Array.from({ length: 1000 }, (_, i) => [`${Array(64).fill('a').join(':')}:${i}`, ['publish']]),
    )
    expect(refusal(() => intersectCapability(key, requested))).toContain(String(MAX_INTERSECTION_STEPS))
    // a few of them intersect
    expect(
      Object.keys(intersectCapability(key, Object.fromEntries(Object.entries(requested).slice(0, 5)))!),
    ).toHaveLength(5)
  })
})

/**
 * The indexed matching (exact names in a map, wildcards in a tree of segments) against the rule
 * it implements, `resourceMatches` applied to every pair, on random capabilities.
 */
describe('indexed matching agrees with resourceMatches on every pair', () => {
  const SEGMENTS = ['a', 'b', '*', '', '[x]a', '[x]*', '[*]*']
  const OPS = ['publish', 'subscribe', 'history', 'presence']
  let seed = 12345
  const rnd = (n: number) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    return seed % n
  }
  const name = () => {
    let r = Array.from({ length: 1 + rnd(4) }, () => SEGMENTS[rnd(SEGMENTS.length)]).join(':')
    if (rnd(10) === 0) r = '[x]' + r
    if (rnd(20) === 0) r = '[*]*'
    return r || 'a'
  }
  const ops = () =>
    rnd(5) === 0 ? ['*'] : [...new Set(Array.from({ length: 1 + rnd(3) }, () => OPS[rnd(OPS.length)]!))]
  const capability = () => Object.fromEntries(Array.from({ length: 1 + rnd(6) }, () => [name(), ops()]))

  /** The pairwise reference: what the capability grants on `channel`. */
  const grants = (cap: Record<string, string[]>, channel: string, op: string) =>
    Object.entries(cap).some(([r, o]) => (o.includes('*') || o.includes(op)) && resourceMatches(r, channel))
  const both = (a: string[], b: string[]) =>
    a.includes('*') ? b : b.includes('*') ? a : a.filter((o) => b.includes(o))
  /** The pairwise reference of intersectCapability, canonical. */
  const reference = (key: Record<string, string[]>, req: Record<string, string[]>) => {
    const out: Record<string, Set<string>> = {}
    const add = (r: string, o: string[]) => o.length && o.forEach((x) => (out[r] ??= new Set()).add(x))
    for (const [rr, ro] of Object.entries(req))
      for (const [kr, ko] of Object.entries(key)) {
        if (resourceMatches(kr, rr)) add(rr, both(ko, ro))
        else if (resourceMatches(rr, kr)) add(kr, both(ko, ro))
      }
    const cap = Object.fromEntries(Object.entries(out).map(([r, s]) => [r, s.has('*') ? ['*'] : [...s]]))
    return Object.keys(cap).length ? canonicalCapability(cap) : undefined
  }

  test('CapabilityMatcher.allows and allowsAnywhere', () => {
    for (let i = 0; i < 3000; i++) {
      const cap = capability()
      const m = new CapabilityMatcher(cap)
      for (let j = 0; j < 5; j++) {
        const channel = name()
        const op = OPS[rnd(OPS.length)]!
        expect([cap, channel, op, m.allows(channel, op)]).toEqual([cap, channel, op, grants(cap, channel, op)])
        expect(m.allowsAnywhere(op, channel)).toBe(grants(cap, channel, op))
      }
    }
  })
  test('intersectCapability', () => {
    for (let i = 0; i < 5000; i++) {
      const key = capability()
      const req = capability()
      const got = intersectCapability(key, req)
      expect([key, req, got && canonicalCapability(got)]).toEqual([key, req, reference(key, req)])
    }
  })
})
