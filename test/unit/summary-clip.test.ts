/**
 * clipSummary: a summary past its bound keeps every name with its exact total and clips the client
 * lists (the same number of clients kept in each, `clipped: true` where cut); only when the names
 * do not fit with empty lists are the least annotated names left out. Pub/sub layouts (flag,
 * distinct, unique, multiple, total) and the chat reactions' ({unique, distinct, multiple}).
 */
import { expect, test } from 'bun:test'
import { summaryOf } from '../../src/core/channels/annotations'
import { clipSummary } from '../../src/core/channels/summary-clip'

const size = (v: unknown) => Buffer.byteLength(JSON.stringify(v))
const SEP = '\u0000'
const client = (i: number) => `client-${i}-`.padEnd(60, 'c')

function state(fields: Array<[string[], string]>): Record<string, string> {
  return Object.fromEntries(fields.map(([f, v]) => [f.join(SEP), v]))
}

test('a summary within the bound is the same object', () => {
  const s = summaryOf(state([[['d', 'r:distinct.v1', 'a', 'x'], '1']]))
  expect(clipSummary(s, 1024)).toBe(s)
})

test('client lists are clipped to fit: every name kept with its total, lists cut alike, clipped set', () => {
  const fields: Array<[string[], string]> = []
  for (let i = 0; i < 300; i++) fields.push([['d', 'r:distinct.v1', `n${i % 3}`, client(i)], '1'])
  for (let i = 0; i < 200; i++) fields.push([['f', 'seen:flag.v1', client(i)], '1'])
  for (let i = 0; i < 100; i++) fields.push([['m', 'v:multiple.v1', 'up', client(i)], String(i + 1)])
  fields.push([['m', 'v:multiple.v1', 'up', ''], '7'])
  fields.push([['t', 'views:total.v1'], '42'])
  const full = summaryOf(state(fields)) as Record<string, any>
  for (const max of [2048, 4096, 10_000, 30_000]) {
    const out = clipSummary(full, max) as Record<string, any>
    expect(size(out)).toBeLessThanOrEqual(max)
    expect(Object.keys(out['r:distinct.v1'])).toEqual(['n0', 'n1', 'n2'])
    for (const n of ['n0', 'n1', 'n2']) expect(out['r:distinct.v1'][n].total).toBe(100)
    expect(out['seen:flag.v1'].total).toBe(200)
    expect(out['views:total.v1']).toEqual({ total: 42 })
    const up = out['v:multiple.v1'].up
    expect([up.total, up.totalClientIds, up.totalUnidentified]).toEqual([5057, 100, 7])
    // every cut list keeps the same clients, from the start of the full list
    const kept = Object.keys(up.clientIds).length
    expect(out['seen:flag.v1'].clientIds).toEqual(full['seen:flag.v1'].clientIds.slice(0, kept))
    expect(out['seen:flag.v1'].clipped).toBe(true)
    expect(up.clipped).toBe(true)
    for (const id of Object.keys(up.clientIds)) expect(up.clientIds[id]).toBe(full['v:multiple.v1'].up.clientIds[id])
    if (max >= 4096) expect(kept).toBeGreaterThan(0)
  }
  // the input is never changed
  expect(full['seen:flag.v1'].clientIds).toHaveLength(200)
  expect(full['seen:flag.v1'].clipped).toBe(false)
})

test('the lists keep as many clients as fit (nothing left unused that one more client each would take)', () => {
  const fields: Array<[string[], string]> = []
  for (let i = 0; i < 50; i++) for (const n of ['a', 'b']) fields.push([['d', 'r:distinct.v1', n, client(i)], '1'])
  const full = summaryOf(state(fields)) as Record<string, any>
  for (let max = 400; max < size(full); max += 97) {
    const out = clipSummary(full, max) as Record<string, any>
    expect(size(out)).toBeLessThanOrEqual(max)
    const k = out['r:distinct.v1'].a.clientIds.length
    expect(out['r:distinct.v1'].b.clientIds).toHaveLength(k)
    // k + 1 clients each are over the bound
    const bigger = structuredClone(out)
    for (const n of ['a', 'b'])
      bigger['r:distinct.v1'][n].clientIds = full['r:distinct.v1'][n].clientIds.slice(0, k + 1)
    if (k + 1 <= 50) expect(size(bigger)).toBeGreaterThan(max)
  }
})

test('names that do not fit even with empty lists: the least annotated left out first', () => {
  const fields: Array<[string[], string]> = []
  for (let i = 0; i < 200; i++) {
    const name = `name-${String(i).padStart(3, '0')}-`.padEnd(100, 'n')
    // name i has i + 1 clients
    for (let c = 0; c <= i % 5; c++) fields.push([['d', 'r:distinct.v1', name, client(c)], '1'])
  }
  const full = summaryOf(state(fields)) as Record<string, any>
  const out = clipSummary(full, 8192) as Record<string, any>
  expect(size(out)).toBeLessThanOrEqual(8192)
  const kept = Object.values(out['r:distinct.v1']) as Array<{ total: number; clientIds: string[]; clipped: boolean }>
  expect(kept.length).toBeGreaterThan(0)
  expect(kept.length).toBeLessThan(200)
  // the kept names are the most annotated ones, with exact totals and empty lists
  expect(Math.min(...kept.map((e) => e.total))).toBeGreaterThanOrEqual(4)
  expect(kept.every((e) => e.clipped && e.clientIds.length === 0)).toBe(true)
})

test("the chat reactions' summary ({unique, distinct, multiple}) is clipped alike, its kinds kept", () => {
  const distinct: Record<string, unknown> = {}
  for (let n = 0; n < 5; n++)
    distinct[`e${n}`] = { total: 100, clientIds: Array.from({ length: 100 }, (_, i) => client(i)), clipped: false }
  const summary = { unique: {}, distinct, multiple: {} }
  const out = clipSummary(summary, 4096) as any
  expect(size(out)).toBeLessThanOrEqual(4096)
  expect(Object.keys(out)).toEqual(['unique', 'distinct', 'multiple'])
  expect(Object.keys(out.distinct)).toHaveLength(5)
  expect(out.distinct.e0.total).toBe(100)
  expect(out.distinct.e0.clipped).toBe(true)
})
