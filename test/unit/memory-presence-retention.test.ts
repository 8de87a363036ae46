import { afterEach, expect, test } from 'bun:test'
import { MemoryPresenceStore } from '../../src/backend/memory/presence-store'
import { PresenceAction, type PresenceMessage } from '../../src/core/types'
import { TestClock } from '../helpers/gateway'

// The embedded presence store keeps presence history as message history is kept (the test clock:
// HISTORY_TTL_MS 2 minutes, PERSISTED_HISTORY_TTL_MS 24 hours) and forgets a channel once it has
// no member and no event left.
const clock = new TestClock(1_000_000)
const TTL = 120_000
const PERSISTED_TTL = 86_400_000
const stores: MemoryPresenceStore[] = []
const store = () => {
  const s = new MemoryPresenceStore(clock, {
    historyTtlMs: TTL,
    persistedHistoryTtlMs: PERSISTED_TTL,
    channelIdleMs: 300_000,
  })
  stores.push(s)
  return s
}
afterEach(() => {
  for (const s of stores.splice(0)) s.close()
})

let n = 0
const event = (action: number, clientId = 'alice'): PresenceMessage => ({
  id: `conn:${n++}:0`,
  action,
  clientId,
  connectionId: 'conn',
  timestamp: clock.now(),
})
const plain = { persisted: false }
const persisted = { persisted: true }
const all = { limit: 100, direction: 'forwards' as const }
const ids = (events: PresenceMessage[]) => events.map((e) => e.action)

test('events past HISTORY_TTL_MS leave reads at once and the store at its sweep; an empty channel is forgotten', async () => {
  const s = store()
  await s.apply('app', 'room', [event(PresenceAction.ENTER), event(PresenceAction.LEAVE)], plain)
  clock.advance(TTL)
  expect(ids(await s.history('app', 'room', all, plain))).toEqual([2, 3])
  clock.advance(1)
  expect(await s.history('app', 'room', all, plain)).toEqual([])
  expect(s.memory()).toEqual({ channels: 1, events: 2 })
  s.sweep()
  expect(s.memory()).toEqual({ channels: 0, events: 0 })
})

test('a write drops the events past retention; a channel with a member present is kept without history', async () => {
  const s = store()
  await s.apply('app', 'room', [event(PresenceAction.ENTER)], plain)
  clock.advance(TTL + 1)
  await s.apply('app', 'room', [event(PresenceAction.UPDATE)], plain)
  expect(s.memory()).toEqual({ channels: 1, events: 1 })
  clock.advance(TTL + 1)
  s.sweep()
  // alice is still present: the members are kept, not the history
  expect(s.memory()).toEqual({ channels: 1, events: 0 })
  expect((await s.members('app', 'room')).map((m) => m.clientId)).toEqual(['alice'])
  await s.apply('app', 'room', [event(PresenceAction.LEAVE)], plain)
  clock.advance(TTL + 1)
  s.sweep()
  expect(s.memory()).toEqual({ channels: 0, events: 0 })
})

test("a persisted namespace's channel keeps its presence history for PERSISTED_HISTORY_TTL_MS", async () => {
  const s = store()
  await s.apply('app', 'keep:room', [event(PresenceAction.ENTER), event(PresenceAction.LEAVE)], persisted)
  clock.advance(TTL + 1)
  s.sweep()
  expect(ids(await s.history('app', 'keep:room', all, persisted))).toEqual([2, 3])
  clock.advance(PERSISTED_TTL - TTL)
  s.sweep()
  expect(await s.history('app', 'keep:room', all, persisted)).toEqual([])
  expect(s.memory()).toEqual({ channels: 0, events: 0 })
})
