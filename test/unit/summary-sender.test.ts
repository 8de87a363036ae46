/**
 * SummarySender: changes of one message made while its summary is being sent are covered by one
 * more round, not one summary each; the last summary sent is the state read last; every caller
 * settles once a summary read after its change went out; another message is not held back.
 */
import { expect, test } from 'bun:test'
import { SummarySender } from '../../src/core/channels/summary-sender'

test('a burst costs a few summaries, the last is the final state, each caller after its own', async () => {
  const sender = new SummarySender()
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
  const sender = new SummarySender()
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
