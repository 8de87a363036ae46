/**
 * REALTIME_MAX_OUTBOUND_RATE (issue 45; the hosted profile's 50): messages one realtime connection
 * is sent per second over all its channels, a second of it as burst. Beyond, they are dropped and
 * the channel is told of the gap once per run of drops, as the hosted service does (its 42915,
 * reaching the client as a continuity loss 80020: a channel UPDATE without `resumed`); history
 * still has everything. With the official client, both protocols; a test clock that stands still
 * keeps the budget from refilling until the test moves it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { createTestGateway, TestClock, type TestGateway } from '../helpers/gateway'
import { closeClients, connectedClient, FORMATS, fresh } from '../helpers/realtime'

const clock = new TestClock()
let gw: TestGateway
let port: number

beforeAll(async () => {
  gw = await createTestGateway({ realtimeMaxOutboundRate: 5 }, clock)
  port = Number(new URL(gw.listen()).port)
})
afterAll(async () => {
  closeClients()
  await gw.close()
})

describe('REALTIME_MAX_OUTBOUND_RATE', () => {
  for (const [format, binary] of FORMATS) {
    test(`${format}: past the budget messages are dropped and the channel told once (80020, not resumed); a second later they flow again`, async () => {
      const sub = await connectedClient(port, { key: gw.key }, binary)
      const name = fresh('outbound')
      const ch = sub.channels.get(name)
      const got: string[] = []
      const updates: Ably.ChannelStateChange[] = []
      ch.on('update', (c) => updates.push(c))
      await ch.subscribe((m) => got.push(m.data as string))
      const publisher = (await connectedClient(port, { key: gw.key }, binary)).channels.get(name)
      await publisher.publish(Array.from({ length: 12 }, (_, i) => ({ name: 'm', data: `a${i}` })))
      // the 12 reach the node at once: 5 go, the rest are dropped; wait for the notice
      for (let i = 0; i < 200 && (got.length < 5 || updates.length < 1); i++) await Bun.sleep(10)
      expect(got).toEqual(['a0', 'a1', 'a2', 'a3', 'a4'])
      expect(updates.map((u) => [u.resumed, u.reason?.code])).toEqual([[false, 80020]])
      // a second later: 5 more go, and a run of drops after a full delivery is told again
      clock.advance(1000)
      await publisher.publish([{ name: 'm', data: 'b0' }])
      for (let i = 0; i < 200 && got.length < 6; i++) await Bun.sleep(10)
      await publisher.publish(Array.from({ length: 6 }, (_, i) => ({ name: 'm', data: `c${i}` })))
      for (let i = 0; i < 200 && (got.length < 10 || updates.length < 2); i++) await Bun.sleep(10)
      expect(got.slice(5)).toEqual(['b0', 'c0', 'c1', 'c2', 'c3'])
      expect(updates.length).toBe(2)
      // history has every message
      const page = await ch.history({ limit: 100 })
      expect(page.items.length).toBe(19)
    })
  }
})
