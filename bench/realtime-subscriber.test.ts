import { afterAll, expect, test } from 'bun:test'
import { Packr } from 'msgpackr'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stopAll } from './lib/processes'
import { sequenceData } from './lib/sequence-payload'
import { startSubscribers } from './lib/sse-subscriber-client'

/**
 * The realtime subscriber process must catch every way a delivery can go wrong, per connection
 * and lane, with connections grouped on different channels: a lost message, a duplicate, a
 * reordering, a message of a lane the connection does not receive, two connections of the same
 * channels that saw different orders, a connection the server drops, and a frame it cannot read.
 * A scripted realtime server plays each case (CONNECTED, ATTACHED, then the script).
 */
const packr = new Packr({ useRecords: false })
const unpackr = new Packr({ useRecords: false, mapsAsObjects: true })
const message = (lane: number, seq: number) => ({
  id: `m${lane}.${seq}`,
  name: 'bench',
  data: sequenceData(lane, seq, undefined, 'xx'),
})
const frame = (channel: string, ...messages: Array<[number, number]>) =>
  packr.pack({ action: 15, channel, channelSerial: 's', messages: messages.map(([l, s]) => message(l, s)) })
const DISCONNECTED = packr.pack({ action: 6, error: { code: 80003, statusCode: 500, message: 'scripted' } })
/** Per channel: the frames sent after ATTACHED to the first and later connections attaching it. */
const scripts: Record<string, Uint8Array[][]> = {
  c1: [
    [frame('c0', [0, 0]), frame('c1', [1, 0]), frame('c0', [0, 1]), frame('c1', [1, 1])],
    [frame('c0', [0, 0], [0, 1]), frame('c1', [1, 0], [1, 1])],
  ], // complete, but two orders (c0 is attached first and sends nothing)
  c2: [[frame('c2', [2, 0], [2, 2]), frame('c2', [2, 2]), frame('c2', [2, 1])]], // a gap, a duplicate, a late one
  c3: [[frame('c3', [3, 0], [0, 2])]], // lane 0 is not this connection's
  c4: [[frame('c4', [4, 0], [4, 1])]], // complete
  c5: [[frame('c5', [5, 0]), DISCONNECTED]], // seq 1 never comes: dropped
  c6: [[frame('c6', [6, 0]), frame('c6', [6, 1]).subarray(0, 20), frame('c6', [6, 1])]], // an unreadable frame
}
const attached: Record<string, number> = {}
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch(req, s) {
    return s.upgrade(req) ? undefined : new Response('upgrade expected', { status: 400 })
  },
  websocket: {
    open(ws) {
      ws.send(packr.pack({ action: 4, connectionId: 'c', connectionDetails: { connectionKey: 'k' } }))
    },
    message(ws, raw) {
      const pm = unpackr.unpack(raw as Buffer) as { action: number; channel: string }
      if (pm.action === 7) return void ws.send(packr.pack({ action: 8 }))
      if (pm.action !== 10) return
      ws.send(packr.pack({ action: 11, channel: pm.channel, channelSerial: 's', flags: 1 << 18 }))
      const n = (attached[pm.channel] = (attached[pm.channel] ?? 0) + 1) - 1
      const variants = scripts[pm.channel] ?? [[]]
      for (const f of variants[Math.min(n, variants.length - 1)]!) ws.send(f)
      if (pm.channel === 'c5') ws.close()
    },
  },
})
afterAll(async () => {
  server.stop(true)
  await stopAll()
})

test('lost, duplicated, reordered, foreign and unreadable deliveries, differing orders and drops are all reported', async () => {
  const subs = await startSubscribers({
    transport: 'realtime',
    base: `http://127.0.0.1:${server.port}`,
    channel: '',
    key: 'app.key:secret',
    count: 7,
    publishers: 7,
    concurrency: 1, // connections of group 0 attach in a known order
    logDir: mkdtempSync(join(tmpdir(), 'realtime-subscriber-test-')),
    groups: [
      { channels: ['c0', 'c1'], key: 'app.key:secret', lanes: [0, 1] },
      { channels: ['c2'], key: 'app.key:secret', lanes: [2] },
      { channels: ['c3'], key: 'app.key:secret', lanes: [3] },
      { channels: ['c4'], key: 'app.key:secret', lanes: [4] },
      { channels: ['c5'], key: 'app.key:secret', lanes: [5] },
      { channels: ['c6'], key: 'app.key:secret', lanes: [6] },
    ],
  })
  try {
    expect(subs.opened.established).toBe(7)
    const s = await subs.settle([2, 2, 3, 1, 2, 2, 2], 1000)
    expect(s.complete).toBe(4) // connections 0 and 6 (c0,c1), 3 (c4) and 5 (c6: complete, with a protocol error)
    expect(s.ahead).toBe(1) // c2: 0 then 2
    expect(s.behind).toBe(2) // c2: 2 again, then 1 late
    expect(s.foreign).toBe(1) // c3: a lane-0 message
    expect(s.missing).toBe(1) // c5's seq 1
    expect(s.lost).toBe(1) // c5: DISCONNECTED
    expect(s.protocolErrors).toBe(1) // c6's truncated frame
    expect(s.orders).toBe(2) // connections 0 and 6 saw c0,c1 interleaved differently
    expect(s.errorSamples.join(' ')).toContain('DISCONNECTED: 80003')
  } finally {
    await subs.close()
  }
})
