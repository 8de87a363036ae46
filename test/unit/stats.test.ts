import { expect, test } from 'bun:test'
import { MemoryStatsStore } from '../../src/backend/memory/stats-store'
import { TestClock } from '../helpers/gateway'

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
