/**
 * Subscription filter expressions (filter-expression.ts) and filtered channel names
 * (filtered-channel.ts) as pure functions: JMESPath semantics of the subset, and the bounds and
 * errors of what does not parse.
 */
import { describe, expect, test } from 'bun:test'
import {
  MAX_FILTER_DEPTH,
  MAX_FILTER_LENGTH,
  MAX_FILTER_NODES,
  parseFilter,
} from '../../src/core/channels/filter-expression'
import { parseFilteredChannel } from '../../src/core/channels/filtered-channel'
import { GatewayError } from '../../src/errors'
import type { Message } from '../../src/core/types'

const msg = (name?: string, extras?: Record<string, unknown>): Message => ({
  id: 'x',
  serial: '1',
  timestamp: 1,
  ...(name === undefined ? {} : { name }),
  ...(extras === undefined ? {} : { extras }),
})
const code = (f: () => unknown): number | undefined => {
  try {
    f()
  } catch (e) {
    return e instanceof GatewayError ? e.code : -1
  }
  return undefined
}

describe('filter expressions', () => {
  const m = msg('ice-cream', { headers: { flavor: 'mint', cost: 35, 'x-y': 'dash', on: true, empty: '' }, ref: 'r' })
  test.each([
    ['name == `"ice-cream"`', true],
    ["name == 'ice-cream'", true],
    ['name != `"ice-cream"`', false],
    ['headers.cost > `30` && headers.cost <= `35`', true],
    ['headers.cost < `"40"`', false], // ordering of a number and a string: null
    ['headers."x-y" == \'dash\'', true],
    ['headers.on', true],
    ['headers.empty', false],
    ['headers.missing == `null`', true],
    ['!headers.missing', true],
    ['!headers.on', false],
    ['extras.ref == \'r\' && extras.headers.flavor == `"mint"`', true],
    ["(name == 'cake' || headers.flavor == 'mint') && !(headers.cost >= `36`)", true],
    ["name == 'it\\'s'", false],
    ['headers == `{"flavor":"mint","cost":35,"x-y":"dash","on":true,"empty":""}`', true],
    ['data == `null`', true], // no such field: the data is never read
  ])('%s -> %p', (expr, expected) => {
    expect(parseFilter(expr)(m)).toBe(expected)
  })

  test('a message without extras or name: headers and name are null', () => {
    expect(parseFilter('!headers && !name')(msg())).toBe(true)
    expect(parseFilter('headers.a == `1`')(msg())).toBe(false)
  })

  test.each([
    'name ==',
    '== name',
    'name == `{bad`',
    "name == 'open",
    'name == `"x"` &&',
    '(name',
    'name ) ',
    'headers.',
    '1 == 1',
    '',
    '   ',
  ])('%p is 40010', (expr) => {
    expect(code(() => parseFilter(expr))).toBe(40010)
  })

  test('bounds: length, depth and terms', () => {
    expect(code(() => parseFilter(`name == '${'a'.repeat(MAX_FILTER_LENGTH)}'`))).toBe(40010)
    expect(code(() => parseFilter(`${'!'.repeat(MAX_FILTER_DEPTH + 1)}name`))).toBe(40010)
    expect(code(() => parseFilter(`${'('.repeat(200)}name${')'.repeat(200)}`))).toBe(40010)
    expect(code(() => parseFilter(Array.from({ length: MAX_FILTER_NODES }, () => 'name').join('||')))).toBe(40010)
    expect(parseFilter(`${'!'.repeat(10)}name`)(msg('n'))).toBe(true)
    expect(parseFilter(`${'!'.repeat(9)}name`)(msg('n'))).toBe(false)
  })
})

describe('filtered channel names', () => {
  const b64 = (s: string) => Buffer.from(s).toString('base64')
  test('the base channel, the filter and the qualifier params', () => {
    const f = parseFilteredChannel(`[filter=${b64("name == 'a'")}?rewind=2]ns:chan`)
    expect(f.base).toBe('ns:chan')
    expect(f.params).toEqual({ rewind: '2' })
    expect(f.filter.matches(msg('a'), { left: 100 })).toBe(true)
    expect(f.filter.matches(msg('b'), { left: 100 })).toBe(false)
  })
  test.each([
    `[filter=${b64("name == 'a'")}]`, // no channel
    `[filter=${b64("name == 'a'")}]:bad`,
    `[filter=not base64!]chan`,
    `[filter=${b64('name ==')}]chan`,
    `[filter=${b64("name == 'a'")}chan`,
    `[filter=${'A'.repeat(2000)}]chan`,
  ])('%p is 40010', (name) => {
    expect(code(() => parseFilteredChannel(name))).toBe(40010)
  })
})
