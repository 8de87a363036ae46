/**
 * The account's channel bounds of the limit profiles (issue 45), with the official client, event
 * streams and, on Redis, a second node on the same store:
 * - ACCOUNT_MAX_CHANNELS (the hosted profile's 10,000): channels active on the account (attached
 *   on some node, and up to 30 s after); an attach that would activate one more is refused with
 *   403 / 40114, a channel ERROR on realtime (the connection stays), the HTTP answer of a stream.
 * - ACCOUNT_MAX_NEW_CHANNEL_RATE (the hosted profile's 250): channels newly activated per
 *   second; beyond, 429 / 90021.
 * A channel active already is never refused. A test clock that stands still keeps buckets from
 * refilling and entries from going stale until the test moves it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ablyError } from '../helpers/ably'
import { createTestGateway, TestClock, type TestGateway } from '../helpers/gateway'
import { closeClients, connectedClient, fresh } from '../helpers/realtime'

const clock = new TestClock()
let gw: TestGateway
/** On Redis a second node on the same store; embedded: the same node. */
let other: TestGateway
let rated: TestGateway

const port = (g: TestGateway) => Number(new URL(g.listen()).port)
const ports = new Map<TestGateway, number>()
const client = (g: TestGateway) => connectedClient(ports.get(g)!, { key: g.key })
const failure = async (p: Promise<unknown>) => {
  const e = await ablyError(p)
  return [e.statusCode, e.code]
}

beforeAll(async () => {
  gw = await createTestGateway({ accountMaxChannels: 3 }, clock)
  const shared = { redisUrl: gw.config.redisUrl, redisPrefix: gw.config.redisPrefix }
  other = gw.core.backendKind === 'redis' ? await createTestGateway({ accountMaxChannels: 3, ...shared }, clock) : gw
  rated = await createTestGateway({ accountMaxNewChannelRate: 2 }, clock)
  for (const g of new Set([gw, other, rated])) ports.set(g, port(g))
})
afterAll(async () => {
  closeClients()
  for (const g of new Set([gw, other, rated])) await g.close()
})

describe('account channel bounds', () => {
  test('ACCOUNT_MAX_CHANNELS: the fourth active channel is refused 403 / 40114 on every node (realtime and event streams); active ones still attach; one let go makes room once stale', async () => {
    const [a, b] = [await client(gw), await client(other)]
    const names = [fresh('c1'), fresh('c2'), fresh('c3')]
    await a.channels.get(names[0]!).attach()
    await b.channels.get(names[1]!).attach()
    await a.channels.get(names[2]!).attach()
    expect(await failure(b.channels.get(fresh('c4')).attach())).toEqual([403, 40114])
    expect(b.connection.state).toBe('connected')
    // an event stream on a fifth: refused with the same error, as the HTTP answer
    const sse = await fetch(`${other.listen()}/sse?v=1.2&channels=${fresh('c5')}&key=${encodeURIComponent(gw.key)}`)
    expect(sse.status).toBe(403)
    expect(((await sse.json()) as { error: { code: number } }).error.code).toBe(40114)
    // a channel active already (on the other node) attaches
    await b.channels.get(names[0]!).attach()
    // c3 let go: counted until stale (30 s); the held ones are named again by each node's refresh
    await a.channels.get(names[2]!).detach()
    expect(await failure(a.channels.get(fresh('c6')).attach())).toEqual([403, 40114])
    clock.advance(31_000)
    await Promise.all([gw.core.activeChannels.refresh(), other.core.activeChannels.refresh()])
    await a.channels.get(fresh('c7')).attach()
    expect(await failure(b.channels.get(fresh('c8')).attach())).toEqual([403, 40114])
  })

  test('ACCOUNT_MAX_NEW_CHANNEL_RATE: past the burst a new channel is refused 429 / 90021; an active one is not new; a second later there are more', async () => {
    const c = await client(rated)
    const [x, y] = [fresh('n1'), fresh('n2')]
    await c.channels.get(x).attach()
    await c.channels.get(y).attach()
    expect(await failure(c.channels.get(fresh('n3')).attach())).toEqual([429, 90021])
    const d = await client(rated)
    await d.channels.get(x).attach()
    clock.advance(1000)
    await d.channels.get(fresh('n4')).attach()
  })
})
