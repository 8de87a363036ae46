/**
 * SummarySender: changes of one message made while its summary is being sent are covered by one
 * more round, not one summary each; the last summary sent is the state read last; every caller
 * settles once a summary read after its change went out; another message is not held back; with
 * an interval, a message's summaries go out at most once per interval (the test clock drives it).
 */
import { expect, test } from 'bun:test'
import {
  SUMMARY_RETRIES,
  SUMMARY_RETRY_MAX_MS,
  SUMMARY_RETRY_MS,
  SummarySender,
} from '../../src/core/channels/summary-sender'
import { systemClock, systemTimers } from '../../src/lib/clock'
import { ClockTimers, TestClock } from '../helpers/gateway'

test('a burst costs a few summaries, the last is the final state, each caller after its own', async () => {
  const sender = new SummarySender(systemClock, systemTimers, 0)
  let state = 0
  const sent: number[] = []
  let release!: () => void
  let gate = new Promise<void>((r) => (release = r))
  const publish = async (n: number) => {
    await gate // the first summary is slow to go out
    sent.push(n)
  }
  const calls: Array<Promise<void>> = []
  const settledAt: number[] = []
  for (let i = 0; i < 10; i++) {
    state++
    const seenState = state
    calls.push(
      sender
        .send('m', async () => state, publish)
        .then(() => {
          // a summary at least as new as the change was sent before this caller settled
          expect(Math.max(...sent)).toBeGreaterThanOrEqual(seenState)
          settledAt.push(seenState)
        }),
    )
  }
  release()
  gate = Promise.resolve()
  await Promise.all(calls)
  expect(sent.length).toBeLessThan(10)
  expect(sent[sent.length - 1]).toBe(10)
  expect(settledAt.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
})

test('a state changed elsewhere after a summary went out is sent again; other messages go on', async () => {
  const sender = new SummarySender(systemClock, systemTimers, 0)
  let state = 'a'
  const sent: string[] = []
  await sender.send(
    'x',
    async () => state,
    async (s) => {
      sent.push(s)
      if (s === 'a') state = 'b' // another node's change, applied while this summary went out
    },
  )
  // the caller settled with 'a' sent; the round that found 'b' runs on (promise callbacks only)
  await new Promise((r) => setTimeout(r, 0))
  expect(sent).toEqual(['a', 'b'])
  const other: string[] = []
  await sender.send(
    'y',
    async () => 'z',
    async (s) => void other.push(s),
  )
  expect(other).toEqual(['z'])
})

test('with an interval: one summary at once, then at most one per interval, the last the final state', async () => {
  const clock = new TestClock(1_000_000)
  const timers = new ClockTimers(clock)
  const sender = new SummarySender(clock, timers, 100)
  let state = 0
  const sent: Array<[number, number]> = []
  const publish = async (n: number) => void sent.push([clock.now(), n])
  const turn = () => new Promise((r) => setTimeout(r, 0))
  // 50 changes, 10 ms apart: the first summary goes out at once, the others wait for the interval
  const calls: Array<Promise<void>> = []
  for (let i = 0; i < 50; i++) {
    state++
    calls.push(sender.send('m', async () => state, publish))
    await turn()
    timers.advance(10)
  }
  for (let i = 0; i < 5; i++) {
    timers.advance(100)
    await turn()
  }
  await Promise.all(calls)
  expect(sent[0]).toEqual([1_000_000, 1])
  expect(sent[sent.length - 1]![1]).toBe(50)
  for (let i = 1; i < sent.length; i++) expect(sent[i]![0] - sent[i - 1]![0]).toBeGreaterThanOrEqual(100)
  expect(sent.length).toBeLessThanOrEqual(7)
  // the message's round ends once a read finds nothing new: no timer is left
  await turn()
  expect(sender.size).toBe(0)
  // a change long after goes out at once
  state++
  const late = sender.send('m', async () => state, publish)
  await turn()
  await late
  expect(sent[sent.length - 1]).toEqual([clock.now(), 51])
})

test('a round that failed is tried again after a growing wait, and gives up after SUMMARY_RETRIES', async () => {
  const clock = new TestClock(1_000_000)
  const timers = new ClockTimers(clock)
  const sender = new SummarySender(clock, timers, 100)
  const turn = () => new Promise((r) => setTimeout(r, 0))
  // the broker fails twice (an outage), then takes the summary
  let failing = 2
  const sent: Array<[number, string]> = []
  const publish = async (s: string) => {
    if (failing-- > 0) throw new Error('broker down')
    sent.push([clock.now(), s])
  }
  await sender.send('m', async () => 'state', publish)
  expect(sent).toEqual([])
  expect(sender.size).toBe(1)
  timers.advance(SUMMARY_RETRY_MS - 1)
  await turn()
  expect(sent).toEqual([])
  timers.advance(1)
  await turn()
  // second failure: the wait doubles
  timers.advance(2 * SUMMARY_RETRY_MS)
  await turn()
  expect(sent).toEqual([[1_000_000 + 3 * SUMMARY_RETRY_MS, 'state']])
  // the round then reads what it sent and ends
  timers.advance(100)
  await turn()
  expect(sender.size).toBe(0)

  // a store that stays down: given up after SUMMARY_RETRIES, no timer left
  let reads = 0
  const down = sender.send(
    'n',
    async () => {
      reads++
      throw new Error('store down')
    },
    publish,
  )
  await down
  for (let i = 0; i < SUMMARY_RETRIES + 2; i++) {
    timers.advance(SUMMARY_RETRY_MAX_MS)
    await turn()
  }
  expect(reads).toBe(SUMMARY_RETRIES + 1)
  expect(sender.size).toBe(0)
})
