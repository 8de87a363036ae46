import { describe, expect, test } from 'bun:test'
import { RecentMemo } from '../../src/lib/recent-memo'
import { batchFrames } from '../../src/api/realtime/frames'
import type { Message } from '../../src/core/types'

describe('RecentMemo', () => {
  test('finds a value by the very key object, not by an equal one', () => {
    const memo = new RecentMemo<object, string>(2)
    const a = [1]
    expect(memo.get(a)).toBeUndefined()
    expect(memo.set(a, 'a')).toBe('a')
    expect(memo.get(a)).toBe('a')
    expect(memo.get([1])).toBeUndefined()
  })

  test('a key read only once is forgotten once newer keys fill its place', () => {
    const memo = new RecentMemo<object, string>(2)
    const a = {}
    memo.set(a, 'a')
    memo.set({}, 'b')
    expect(memo.get(a)).toBe('a')
    const c = {}
    memo.set(c, 'c')
    memo.set({}, 'd')
    memo.set({}, 'e')
    // `a` was read again, so it was kept; `c` was not
    expect(memo.get(a)).toBe('a')
    expect(memo.get(c)).toBeUndefined()
  })

  test('a key read again stays found however many other keys come between its reads', () => {
    const memo = new RecentMemo<object, number>(4)
    const shared = {}
    memo.set(shared, 0)
    expect(memo.get(shared)).toBe(0)
    for (let i = 1; i <= 100; i++) {
      const other = {}
      expect(memo.get(other)).toBeUndefined()
      memo.set(other, i)
      expect(memo.get(shared)).toBe(0)
    }
  })

  test("lets its keys go once the turn's synchronous work ends, still finding one that was read again", async () => {
    const memo = new RecentMemo<object, string>(4)
    const once = {}
    const twice = {}
    memo.set(once, 'once')
    memo.set(twice, 'twice')
    expect(memo.get(twice)).toBe('twice')
    await Promise.resolve()
    expect(memo.get(once)).toBeUndefined()
    expect(memo.get(twice)).toBe('twice')
  })
})

describe('delivery frames shared by the subscribers of a batch', () => {
  const batch = (i: number): Message[] => [
    { id: `m${i}`, name: 'n', data: `d${i}`, serial: `01700000000000-${String(i).padStart(3, '0')}`, timestamp: 1 },
  ]

  test('are encoded once per format even when other batches are delivered between its subscribers', () => {
    const b = batch(0)
    const first = batchFrames(b, 'ch', 'json')
    expect(batchFrames(b, 'ch', 'json')).toBe(first)
    for (let i = 1; i <= 20; i++) {
      batchFrames(batch(i), `other-${i}`, 'json')
      expect(batchFrames(b, 'ch', 'json')).toBe(first)
    }
    expect(batchFrames(b, 'ch', 'msgpack')).not.toBe(first)
  })
})
