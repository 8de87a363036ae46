/**
 * The work filtered channels cost a node (issue 40, item 1), counted in steps, never timed: a
 * distinct filter runs once per delivered batch however many subscribers share it
 * (fanout/channel-filters.ts); one evaluation's work is bounded by its meter whatever the message
 * (channels/filter-expression.ts): comparisons of literals are done at parse time, a message's
 * key lists are made once, and a filter past its share of the channel's budget is refused while
 * the cheap filters beside it go on.
 */
import { describe, expect, test } from 'bun:test'
import { compileFilter, type CompiledFilter } from '../../src/core/channels/filter-expression'
import { ChannelFilters } from '../../src/core/fanout/channel-filters'
import type { Message } from '../../src/core/types'
import { bombFilters, bombMessages } from '../helpers/filter-bomb'

const msg = (i: number, extras?: Record<string, unknown>): Message => ({
  id: `m${i}`,
  serial: String(i),
  timestamp: 1,
  name: `n${i}`,
  ...(extras ? { extras } : {}),
})
/** Steps one evaluation of `expression` on `m` costs. */
const steps = (expression: string | CompiledFilter, m: Message) => {
  const f = typeof expression === 'string' ? compileFilter(expression) : expression
  const meter = { left: 1e9 }
  f.matches(m, meter)
  return 1e9 - meter.left
}
/** A filter that counts its evaluations. */
const counting = (expression: string) => {
  const f = compileFilter(expression)
  const counted = {
    expression,
    runs: 0,
    matches: (m: Message, meter: { left: number }) => (counted.runs++, f.matches(m, meter)),
  }
  return counted
}

describe('shared filters', () => {
  test('a filter shared by 1,000 subscribers runs once per batch; all get the same array', () => {
    const filters = new ChannelFilters({ filterBudgetSteps: 1_000_000 })
    const f = counting("name == 'n1'")
    const subs = Array.from({ length: 1000 }, () => filters.acquire('app', 'ch', f))
    expect(new Set(subs).size).toBe(1)
    expect(filters.size).toBe(1)
    const batch = [msg(0), msg(1), msg(2)]
    const outs = subs.map((s) => s.apply(batch))
    expect(f.runs).toBe(3)
    expect(outs[0]!.map((m) => m.name)).toEqual(['n1'])
    expect(new Set(outs).size).toBe(1)
    // a batch that passes whole is handed on as it is
    const passing = [msg(1)]
    expect(subs[0]!.apply(passing)).toBe(passing)
    for (const s of subs) s.release()
    expect(filters.size).toBe(0)
  })

  test('the same expression on another channel or app is another filter', () => {
    const filters = new ChannelFilters({ filterBudgetSteps: 1000 })
    const f = compileFilter("name == 'x'")
    const a = filters.acquire('app', 'one', f)
    expect(filters.acquire('app', 'two', f)).not.toBe(a)
    expect(filters.acquire('other', 'one', f)).not.toBe(a)
    expect(filters.acquire('app', 'one', compileFilter("name == 'x'"))).toBe(a)
    expect(filters.size).toBe(3)
  })

  test('a costly filter is refused on a batch past its share; a cheap one beside it is served', () => {
    const filters = new ChannelFilters({ filterBudgetSteps: 100_000 })
    const bomb = filters.acquire('app', 'bomb', compileFilter(bombFilters('pairs', 1)[0]!.expression))
    const cheap = filters.acquire('app', 'bomb', compileFilter("name == 'm3'"))
    const batch = bombMessages('pairs', 500, 60_000) as unknown as Message[]
    expect(bomb.apply(batch)).toBeUndefined()
    expect(bomb.refused().code).toBe(90000)
    expect(cheap.apply(batch)!.map((m) => m.name)).toEqual(['m3'])
  })

  test('presence always passes, and costs no step', () => {
    const filters = new ChannelFilters({ filterBudgetSteps: 1000 })
    const f = counting("name == 'none'")
    const s = filters.acquire('app', 'ch', f)
    const presence = { ...msg(1), kind: 'presence' } as Message
    expect(s.apply([presence, msg(2)])).toEqual([presence])
    expect(f.runs).toBe(1)
  })
})

describe('the cost of one evaluation', () => {
  const big = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, i]))

  test('comparisons of literals are made once, when the filter is parsed', () => {
    const lit = `\`${JSON.stringify(Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, i])))}\``
    expect(steps(`${lit} == ${lit} && !(${lit} != ${lit})`, msg(1))).toBe(1)
  })

  test("a message's large headers are listed once, not once per comparison or filter", () => {
    const m = msg(1, { headers: big })
    const f = compileFilter('headers == `{"k0":0}` || headers == `{"k1":1}` || headers && headers')
    expect(steps(f, m)).toBeGreaterThan(5000) // the first evaluation lists the keys
    expect(steps(f, m)).toBeLessThan(20)
    expect(steps('headers == `{"k0":0}`', m)).toBeLessThan(10) // another filter, the same message
  })

  test('comparing two parts of a message costs what it walks, and stops at the meter', () => {
    const a = Array.from({ length: 10_000 }, (_, i) => i)
    const m = msg(1, { headers: { a, b: [...a] } })
    expect(steps('headers.a == headers.b', m)).toBeGreaterThan(10_000)
    const meter = { left: 500 }
    expect(compileFilter('headers.a == headers.b || name').matches(m, meter)).toBeUndefined()
    expect(meter.left).toBeLessThan(0)
    expect(meter.left).toBeGreaterThan(-10)
  })

  test('long strings of equal length are charged by their length', () => {
    const s = 'x'.repeat(64_000)
    const m = msg(1, { headers: { a: s, b: s.slice(0, -1) + 'y' } })
    expect(steps('headers.a == headers.b', m)).toBeGreaterThan(1000)
  })
})
