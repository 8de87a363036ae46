/**
 * ACCOUNT_MAX_CONNECTION_RATE (issue 45; the hosted profile's 250): new realtime connections of an
 * account per second, a second of it as burst, counted in the rate-limit store (every node); past
 * it the connect is refused with ERROR 429 / 80021 (the hosted service's "account-wide connection
 * creation rate exceeded"), and a resume is not a new connection. A test clock that stands still
 * keeps the bucket from refilling, so exactly the burst is admitted whatever the machine's speed.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestGateway, TestClock, type TestGateway } from '../helpers/gateway'
import { closeRawClients, rawConnected, type Pm, RawClient, realtimeUrl } from '../helpers/realtime-raw'
import { closeClients, reach, realtimeClient } from '../helpers/realtime'

const clock = new TestClock()
let gw: TestGateway
let base: string

beforeAll(async () => {
  gw = await createTestGateway({ accountMaxConnectionRate: 3 }, clock)
  base = gw.listen()
})
afterAll(() => {
  closeClients()
  closeRawClients()
  gw.close()
})

describe('ACCOUNT_MAX_CONNECTION_RATE', () => {
  test('past the burst a new connection is refused with 429 / 80021 (the official client fails); a resume is not counted', async () => {
    const first = await rawConnected(base, { key: gw.key })
    await rawConnected(base, { key: gw.key })
    await rawConnected(base, { key: gw.key })
    // the fourth: ERROR, then the socket closes
    const fourth = new RawClient(realtimeUrl(base, { format: 'json', v: '6', key: gw.key }), 'json')
    const refused: Pm = await fourth.next((f) => f.action === 4 || f.action === 9)
    expect([refused.action, refused.error?.statusCode, refused.error?.code]).toEqual([9, 429, 80021])
    // the official client: the connection fails with the hosted error
    const client = realtimeClient(Number(new URL(base).port), { key: gw.key })
    await reach(client.connection, 'failed')
    expect([client.connection.errorReason?.statusCode, client.connection.errorReason?.code]).toEqual([429, 80021])
    // a resume of a live connection is the same connection: admitted with the bucket empty
    first.raw.close()
    const key = first.connected.connectionDetails.connectionKey as string
    const resumed = await rawConnected(base, { key: gw.key, resume: key })
    expect(resumed.connected.connectionId).toBe(first.connected.connectionId)
    // a second later the bucket has refilled by the rate
    clock.advance(1000)
    for (let i = 0; i < 3; i++) await rawConnected(base, { key: gw.key })
    const again = new RawClient(realtimeUrl(base, { format: 'json', v: '6', key: gw.key }), 'json')
    expect((await again.next((f) => f.action === 4 || f.action === 9)).error?.code).toBe(80021)
  })
})
