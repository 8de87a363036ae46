import { expect, test } from 'bun:test'
import { BufferBudget, type AccountShare } from '../../src/backend/amqp/buffer-budget'

/** A lane holding its messages (oldest first), some of them in flight (not evictable). */
class FakeLane {
  items: string[] = []
  inFlight = 0
  dropped: string[] = []
  share!: AccountShare
  constructor(private readonly budget: BufferBudget) {}
  waiting() {
    return this.items.length - this.inFlight
  }
  evictOldest() {
    if (this.waiting() === 0) return false
    this.dropped.push(this.items.splice(this.inFlight, 1)[0]!)
    this.budget.release(this.share)
    return true
  }
  push(item: string) {
    if (!this.budget.take(this.share)) return false
    this.items.push(item)
    return true
  }
}

const laneOf = (budget: BufferBudget, account: string) => {
  const lane = new FakeLane(budget)
  lane.share = budget.join(account, lane)
  return lane
}

test('while there is room every message is taken; once full, the account holding the most gives up its oldest', () => {
  const budget = new BufferBudget(10)
  const a = laneOf(budget, 'A')
  const b = laneOf(budget, 'B')
  for (let i = 0; i < 10; i++) expect(a.push(`a${i}`)).toBe(true)
  // full, and A holds the most: its own new message is refused
  expect(a.push('a10')).toBe(false)
  // B holds fewer: each of B's takes the place of A's oldest
  for (let i = 0; i < 5; i++) expect(b.push(`b${i}`)).toBe(true)
  expect(a.dropped).toEqual(['a0', 'a1', 'a2', 'a3', 'a4'])
  expect([a.share.held, b.share.held, budget.held]).toEqual([5, 5, 10])
  // equal shares: neither takes the other's place
  expect(b.push('b5')).toBe(false)
  expect(a.push('a11')).toBe(false)
})

test("an account's apps share its part; messages in flight are not evicted", () => {
  const budget = new BufferBudget(6)
  const a1 = laneOf(budget, 'A')
  const a2 = laneOf(budget, 'A')
  const b = laneOf(budget, 'B')
  expect(a1.share).toBe(a2.share)
  for (let i = 0; i < 3; i++) a1.push(`x${i}`)
  for (let i = 0; i < 3; i++) a2.push(`y${i}`)
  // the lane of A with the most waiting gives up its oldest
  a1.inFlight = 3
  expect(b.push('b0')).toBe(true)
  expect(a2.dropped).toEqual(['y0'])
  // all of A's in flight: B's next is refused rather than one of them
  a2.inFlight = 2
  expect(b.push('b1')).toBe(false)
  a2.inFlight = 1
  expect(b.push('b1')).toBe(true)
  expect(a2.dropped).toEqual(['y0', 'y2'])
  expect(a1.dropped).toEqual([])
  expect([a1.share.held, b.share.held, budget.held]).toEqual([4, 2, 6])
})
