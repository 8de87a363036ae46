import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mergePatch } from '../../src/core/objects/merge'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { NO_LIMITS, patchOk } from './util'

/** RFC 7396 appendix A: target, patch, result. */
const RFC_CASES: Array<[unknown, unknown, unknown]> = [
  [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
  [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
  [{ a: 'b' }, { a: null }, {}],
  [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
  [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
  [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
  [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
  [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
  [
    ['a', 'b'],
    ['c', 'd'],
    ['c', 'd'],
  ],
  [{ a: 'b' }, ['c'], ['c']],
  [{ a: 'foo' }, null, null],
  [{ a: 'foo' }, 'bar', 'bar'],
  [{ e: null }, { a: 1 }, { e: null, a: 1 }],
  [[1, 2], { a: 'b', c: null }, { a: 'b' }],
  [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
]

describe('mergePatch (unit)', () => {
  test.each(RFC_CASES)('%j + %j = %j', (target, patch, result) => {
    const before = JSON.stringify(target)
    expect(mergePatch(target as any, patch as any)).toEqual(result as any)
    expect(JSON.stringify(target)).toBe(before) // the target is not changed
  })
})

describe('PATCH applies the same rule on this backend', () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await createTestGateway(NO_LIMITS)
  })
  afterAll(async () => {
    await gw.close()
  })

  // object targets without null members (PATCH cannot store a null member) and object patches
  const httpCases = RFC_CASES.filter(([t, p]) => isObj(t) && isObj(p) && !Object.values(t as object).includes(null))
  test.each(httpCases.map((c, i) => [i, ...c] as const))('case %d: %j + %j = %j', async (i, target, patch, result) => {
    await patchOk(gw, 'rfc7396', `case${i}`, target)
    expect((await patchOk(gw, 'rfc7396', `case${i}`, patch)).data).toEqual(result)
  })
})

function isObj(v: unknown): boolean {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}
