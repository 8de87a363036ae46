/**
 * The worked example of docs/testing-your-app.md, run as it is written there: an application's
 * reconnect handling tested with the official client and the fault API, against `gateway sandbox
 * --faults` (here: a gateway of the test's own with FAULTS on).
 */
import { afterEach, expect, test } from 'bun:test'
import * as Ably from 'ably'
import { faultSession, type FaultSession } from '../helpers/faults'
import { realtimeGateway } from '../helpers/realtime'
import { waitFor } from '../helpers/wait'

const rt = realtimeGateway({ faults: true, faultsPort: 0 })
let session: FaultSession | undefined
afterEach(async () => {
  await session?.close()
  session = undefined
})

// --- the doc's example starts here ---
/** The application under test: a feed that keeps every order it hears of, renewing its token. */
function orderFeed(port: number, mintToken: () => Promise<Ably.TokenDetails>) {
  let tokens = 0
  const client = new Ably.Realtime({
    endpoint: '127.0.0.1',
    port,
    tls: false,
    authCallback: (_params, cb) => {
      tokens++
      mintToken().then(
        (t) => cb(null, t),
        (e) => cb(e, null),
      )
    },
    disconnectedRetryTimeout: 200,
    logLevel: 0,
  })
  const orders: string[] = []
  const ready = client.channels.get('orders').subscribe((m) => orders.push(m.data as string))
  return { client, orders, ready, tokens: () => tokens }
}

test('no order is lost when the connection drops, the token expires, or a publish fails once', async () => {
  const control = rt.gw.faultsUrl! // PROXY_CONTROL_HOST printed by `gateway sandbox --faults`
  const admin = rt.rest() // the app's back office, straight to the gateway
  session = await faultSession(control)
  const feed = orderFeed(session.port, () => admin.auth.requestToken())
  await feed.ready

  // 1. drop the connection while orders keep coming: the client resumes, nothing is lost
  const back = admin.channels.get('orders')
  await back.publish('order', 'a')
  await session.act({ type: 'disconnect' })
  await back.publish('order', 'b')
  await back.publish('order', 'c')
  await waitFor(
    () => feed.orders,
    (o) => o.length === 3,
  )
  expect(feed.orders).toEqual(['a', 'b', 'c'])

  // 2. the server says the token expired: the client gets a new one and carries on
  const before = feed.tokens()
  await session.act({
    type: 'inject_to_client_and_close',
    message: { action: 6, error: { code: 40142, statusCode: 401, message: 'Token expired' } },
  })
  await back.publish('order', 'd')
  await waitFor(
    () => feed.orders,
    (o) => o.length === 4,
  )
  expect(feed.tokens()).toBeGreaterThan(before)

  // 3. a publish through the session fails once with 503: the client retries it, stored once
  await session.addRules([
    {
      match: { type: 'http_request', method: 'POST', pathContains: '/channels/orders/messages' },
      action: {
        type: 'http_respond',
        status: 503,
        body: { error: { code: 50300, statusCode: 503, message: 'try again' } },
      },
      times: 1,
    },
  ])
  const shop = new Ably.Rest({
    key: rt.gw.key,
    endpoint: '127.0.0.1',
    port: session.port,
    tls: false,
    fallbackHosts: ['localhost'],
    logLevel: 0,
  })
  await shop.channels.get('orders').publish('order', 'e')
  await waitFor(
    () => feed.orders,
    (o) => o.length === 5,
  )
  expect(feed.orders).toEqual(['a', 'b', 'c', 'd', 'e'])
  const statuses = (await session.log()).filter((e) => e.type === 'http_response').map((e) => e.status)
  expect(statuses).toEqual([503, 201])
  feed.client.close()
})
// --- the doc's example ends here ---
