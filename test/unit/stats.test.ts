import { expect, test } from 'bun:test'
import { MemoryStatsStore } from '../../src/backend/memory/stats-store'
import { TestClock } from '../helpers/gateway'
import { withTotals } from '../../src/core/stats/entries'

test('stats roll minutes up into hours: counters add up, peaks keep the highest', async () => {
  const hour = Date.UTC(2026, 0, 1, 10)
  const clock = new TestClock(hour + 3 * 3_600_000)
  const store = new MemoryStatsStore(clock)
  store.add(['app'], hour + 60_000, { 'messages.all.messages.count': 3, 'connections.all.peak': 3 })
  store.add(['app'], hour + 120_000, { 'messages.all.messages.count': 4, 'connections.all.peak': 5 })
  store.add(['app'], hour + 120_000, { 'connections.all.peak': 2 })
  const [h] = await store.query('app', 'hour', hour, hour + 3_599_999, 10, 'forwards')
  expect(h!.entries).toEqual({ 'messages.all.messages.count': 7, 'connections.all.peak': 5 })
  const minutes = await store.query('app', 'minute', hour, hour + 3_599_999, 10, 'forwards')
  expect(minutes.map((m) => m.entries['connections.all.peak'])).toEqual([3, 5])
})

test('a minute written for the distant past stays queryable; a minute bucket goes 48 h after its last write', async () => {
  const clock = new TestClock(Date.UTC(2026, 5, 1))
  const store = new MemoryStatsStore(clock)
  const lastYear = Date.UTC(2025, 1, 3, 15, 3)
  const query = () => store.query('app', 'minute', lastYear, lastYear + 59_999, 10, 'forwards')
  store.add(['app'], lastYear, { 'messages.inbound.all.messages.count': 50 })
  expect((await query()).map((r) => r.entries)).toEqual([{ 'messages.inbound.all.messages.count': 50 }])
  clock.advance(47 * 3_600_000)
  expect(await query()).toHaveLength(1)
  clock.advance(2 * 3_600_000)
  expect(await query()).toEqual([])
  // the hour it was folded into is still there
  const [hour] = await store.query('app', 'hour', lastYear, lastYear, 10, 'forwards')
  expect(hour!.entries['messages.inbound.all.messages.count']).toBe(50)
})

test('withTotals adds the all totals of each direction, transport and type; totals given are kept', () => {
  const e = withTotals({
    'messages.inbound.realtime.messages.count': 3,
    'messages.inbound.rest.messages.count': 2,
    'messages.inbound.rest.presence.count': 1,
    'messages.outbound.realtime.messages.count': 7,
    'messages.outbound.all.messages.count': 100,
    'messages.persisted.presence.data': 9,
    'connections.all.peak': 4,
  })
  expect(e).toEqual({
    'messages.inbound.realtime.messages.count': 3,
    'messages.inbound.rest.messages.count': 2,
    'messages.inbound.rest.presence.count': 1,
    'messages.outbound.realtime.messages.count': 7,
    'messages.outbound.all.messages.count': 100,
    'messages.persisted.presence.data': 9,
    'connections.all.peak': 4,
    'messages.inbound.realtime.all.count': 3,
    'messages.inbound.rest.all.count': 3,
    'messages.outbound.realtime.all.count': 7,
    'messages.inbound.all.messages.count': 5,
    'messages.inbound.all.presence.count': 1,
    'messages.inbound.all.all.count': 6,
    'messages.outbound.all.all.count': 7,
    'messages.all.messages.count': 105,
    'messages.all.presence.count': 1,
    'messages.all.all.count': 13,
    'messages.persisted.all.data': 9,
  })
})
