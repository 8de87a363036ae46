/**
 * The account's connection bounds of the limit profiles (issue 45), with the official client and
 * raw WebSockets:
 * - ACCOUNT_MAX_CONNECTION_RATE (the hosted profile's 250): new realtime connections of an
 *   account per second, a second of it as burst, counted in the rate-limit store (every node);
 *   past it the connect is refused with ERROR 429 / 80021 (the hosted service's "account-wide
 *   connection creation rate exceeded"), and a resume is not a new connection. A test clock that
 *   stands still keeps the bucket from refilling, so exactly the burst is admitted whatever the
 *   machine's speed.
 * - ACCOUNT_MAX_CONNECTIONS (the hosted profile's 10,000): live connections of an account on
 *   every node together; past it ERROR 403 / 40111, and a connection that leaves makes room.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestGateway, TestClock, type TestGateway } from '../helpers/gateway'
import { closeRawClients, rawConnected, type Pm, RawClient, realtimeUrl } from '../helpers/realtime-raw'
import { closeClients, fresh, reach, realtimeClient } from '../helpers/realtime'
import { openSse } from '../helpers/sse'

const clock = new TestClock()
let gw: TestGateway
let base: string
let bounded: TestGateway
let boundedBase: string
/** On Redis a second node on the same store (the bound holds on both together); embedded: the same node. */
let other: TestGateway
let otherBase: string

beforeAll(async () => {
  gw = await createTestGateway({ accountMaxConnectionRate: 3 }, clock)
  base = gw.listen()
  bounded = await createTestGateway({ accountMaxConnections: 2 })
  boundedBase = bounded.listen()
  const shared = { redisUrl: bounded.config.redisUrl, redisPrefix: bounded.config.redisPrefix }
  other =
    bounded.core.backendKind === 'redis' ? await createTestGateway({ accountMaxConnections: 2, ...shared }) : bounded
  otherBase = other === bounded ? boundedBase : other.listen()
})
afterAll(() => {
  closeClients()
  closeRawClients()
  gw.close()
  if (other !== bounded) other.close()
  bounded.close()
})

/** The first frame a raw connect gets: CONNECTED (4) or ERROR (9). */
const firstFrame = (at: string, key: string, query: Record<string, string> = {}) =>
  new RawClient(realtimeUrl(at, { format: 'json', v: '6', key, ...query }), 'json').next(
    (f) => f.action === 4 || f.action === 9,
  )

/** The first frame of connects tried until one is CONNECTED: a connection that left makes room once the node saw it close (bounded far beyond that). */
async function connectOnceRoom(at: string, key: string): Promise<Pm | undefined> {
  let next: Pm | undefined
  for (let i = 0; i < 100 && next?.action !== 4; i++) {
    next = await firstFrame(at, key)
    if (next.action !== 4) await Bun.sleep(20)
  }
  return next
}

/** Waits until the bounded gateway's account count (every node) satisfies `ok` (bounded far beyond a report's turn). */
async function untilCount(ok: (n: number) => boolean) {
  const account = (await bounded.core.auth.authenticate({ key: bounded.key, secure: () => true })).accountId
  for (let i = 0; i < 200 && !ok(await bounded.core.accountConnections.count(account)); i++) await Bun.sleep(10)
}

describe('account connection bounds', () => {
  test('ACCOUNT_MAX_CONNECTION_RATE: past the burst a new connection is refused with 429 / 80021 (the official client fails); a resume is not counted', async () => {
    const first = await rawConnected(base, { key: gw.key })
    await rawConnected(base, { key: gw.key })
    await rawConnected(base, { key: gw.key })
    // the fourth: ERROR, then the socket closes
    const refused = await firstFrame(base, gw.key)
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
    expect((await firstFrame(base, gw.key)).error?.code).toBe(80021)
  })

  test('ACCOUNT_MAX_CONNECTIONS: past it a new connection is refused with 403 / 40111 (the official client fails); one leaving makes room; a resume is let through', async () => {
    const a = await rawConnected(boundedBase, { key: bounded.key })
    await rawConnected(otherBase, { key: bounded.key })
    // the other node's count reaches the store within a turn of its event loop: wait for it to be read here
    await untilCount((n) => n >= 2)
    const refused = await firstFrame(boundedBase, bounded.key)
    expect([refused.action, refused.error?.statusCode, refused.error?.code]).toEqual([9, 403, 40111])
    const client = realtimeClient(Number(new URL(boundedBase).port), { key: bounded.key })
    await reach(client.connection, 'failed')
    expect([client.connection.errorReason?.statusCode, client.connection.errorReason?.code]).toEqual([403, 40111])
    // `a` drops: once the node has seen its socket close there is room for one
    a.raw.close()
    expect((await connectOnceRoom(boundedBase, bounded.key))?.action).toBe(4)
    // full again; `a` resumes all the same: the same connection, not a new one
    expect((await firstFrame(boundedBase, bounded.key)).error?.code).toBe(40111)
    const resumed = await rawConnected(boundedBase, {
      key: bounded.key,
      resume: a.connected.connectionDetails.connectionKey as string,
    })
    expect(resumed.connected.connectionId).toBe(a.connected.connectionId)
  })

  test('ACCOUNT_MAX_CONNECTIONS: an event stream is a connection of its account (counted, and refused 403 / 40111 past the bound)', async () => {
    closeRawClients()
    closeClients()
    // the connections of the test before leave once the node has seen their sockets close
    await untilCount((n) => n === 0)
    const url = `${boundedBase}/sse?v=1.2&channels=${fresh('stream')}&key=${encodeURIComponent(bounded.key)}`
    const stream = await openSse(url)
    expect(stream.status).toBe(200)
    await rawConnected(boundedBase, { key: bounded.key })
    const refused = await firstFrame(boundedBase, bounded.key)
    expect([refused.action, refused.error?.code]).toEqual([9, 40111])
    const second = await fetch(url)
    expect(second.status).toBe(403)
    expect(((await second.json()) as { error: { code: number } }).error.code).toBe(40111)
    // the stream ends: room for one again
    stream.close()
    expect((await connectOnceRoom(boundedBase, bounded.key))?.action).toBe(4)
  })
})
