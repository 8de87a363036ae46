import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stopAll } from './lib/processes'
import { sequenceData } from './lib/sequence-payload'
import { startSubscribers } from './lib/sse-subscriber-client'

/**
 * The subscriber process must catch every way a delivery can go wrong, per stream and lane, with
 * streams grouped on different channels: a lost message, a duplicate, a reordering, a message of
 * a channel the stream did not subscribe to, and two streams of the same channels that saw
 * different orders. A scripted event-stream server plays each case.
 */
const record = (lane: number, seq: number) =>
  `id: x${seq}\nevent: message\ndata: ${JSON.stringify({ id: `m${seq}:0`, channel: `c${lane}`, name: 'bench', data: sequenceData(lane, seq, undefined, 'xx') })}\n\n`
const opened: Record<string, number> = {}
/** Per channels parameter: the records of the first and of later streams opening it. */
const scripts: Record<string, Array<Array<[number, number]>>> = {
  'c0,c1': [
    [
      [0, 0],
      [1, 0],
      [0, 1],
      [1, 1],
    ],
    [
      [0, 0],
      [0, 1],
      [1, 0],
      [1, 1],
    ],
  ], // complete, but two orders
  c2: [
    [
      [2, 0],
      [2, 2],
      [2, 2],
      [2, 1],
    ],
  ], // seq 1 late: a gap, a duplicate, a late one
  c3: [
    [
      [3, 0],
      [0, 2],
    ],
  ], // lane 0 is not on this stream
  c4: [
    [
      [4, 0],
      [4, 1],
    ],
  ], // complete
  c5: [[[5, 0]]], // seq 1 never comes: lost
}
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch(req) {
    const channels = new URL(req.url).searchParams.get('channels') ?? ''
    const n = (opened[channels] = (opened[channels] ?? 0) + 1) - 1
    const variants = scripts[channels]!
    const text = variants[Math.min(n, variants.length - 1)]!.map(([lane, seq]) => record(lane, seq)).join('')
    return new Response(
      new ReadableStream({
        start(c) {
          c.enqueue(new TextEncoder().encode(`\n${text}`))
        },
      }),
      { headers: { 'content-type': 'text/event-stream' } },
    )
  },
})
afterAll(async () => {
  server.stop(true)
  await stopAll()
})

test('lost, duplicated, reordered and foreign messages and differing orders are all reported', async () => {
  const subs = await startSubscribers({
    base: `http://127.0.0.1:${server.port}`,
    channel: '',
    key: 'k',
    count: 6,
    publishers: 6,
    logDir: mkdtempSync(join(tmpdir(), 'sse-subscriber-test-')),
    groups: [
      { channels: ['c0', 'c1'], key: 'k', lanes: [0, 1] },
      { channels: ['c2'], key: 'k', lanes: [2] },
      { channels: ['c3'], key: 'k', lanes: [3] },
      { channels: ['c4'], key: 'k', lanes: [4] },
      { channels: ['c5'], key: 'k', lanes: [5] },
    ],
  })
  try {
    expect(subs.opened.established).toBe(6)
    const s = await subs.settle([2, 2, 3, 1, 2, 2], 500)
    expect(s.complete).toBe(3) // streams 0 and 5 (c0,c1: stream 5 is group 0 again) and 3 (c4)
    expect(s.ahead).toBe(1) // c2: 0 then 2
    expect(s.behind).toBe(2) // c2: 2 again, then 1 late
    expect(s.foreign).toBe(1) // c3: a lane-0 message
    expect(s.missing).toBe(1) // c5's seq 1 (c2's seq 1 came late, c3 got its one message)
    expect(s.orders).toBe(2) // streams 0 and 5 saw c0,c1 interleaved differently
  } finally {
    await subs.close()
  }
})
