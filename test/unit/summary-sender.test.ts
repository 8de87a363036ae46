/**
 * SummarySender: changes of one message made while its summary is being sent are covered by one
 * more round, not one summary each; the last summary sent is the state read last; every caller
 * settles once a summary read after its change went out; another message is not held back; with
 * an interval, a message's summaries go out at most once per interval (the test clock drives it).
 */
import { expect, test } from 'bun:test'
import { SummarySender } from '../../src/core/channels/summary-sender'
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
