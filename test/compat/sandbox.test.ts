/**
 * Sandbox provisioning as client-library test harnesses use it: one unauthenticated `POST /apps`,
 * then official `ably` clients (msgpack and JSON) configured from nothing but its answer.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { TEST_APP_SETUP, clientOf, provisionApp, type ProvisionedApp } from '../helpers/sandbox'

let gw: TestGateway
let base: string
let app: ProvisionedApp
beforeAll(async () => {
  gw = await createTestGateway({ sandboxProvisioning: true })
  base = listen(gw)
  app = await provisionApp(base)
})
afterAll(async () => {
  await gw.close()
})

test('the answer says where this server is: endpoint, port and tls', () => {
  const url = new URL(base)
  expect({ endpoint: app.endpoint, port: app.port, tls: app.tls }).toEqual({
    endpoint: url.hostname,
    port: Number(url.port),
    tls: false,
  })
  expect(app.keys).toHaveLength(TEST_APP_SETUP.keys.length)
  expect(app.namespaces).toHaveLength(TEST_APP_SETUP.namespaces.length)
})

test('behind a TLS proxy the answer says tls (and the default HTTPS port when the host names none)', async () => {
  const r = await gw.app.handle(
    new Request('http://gateway.example/apps', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-proto': 'https' },
      body: '{}',
    }),
  )
  expect(r.status).toBe(201)
  expect(await r.json()).toMatchObject({ endpoint: 'gateway.example', port: 443, tls: true })
})

describe.each([
  { protocol: 'msgpack', useBinaryProtocol: true },
  { protocol: 'json', useBinaryProtocol: false },
])('ably-js configured from the provisioning answer, over $protocol', ({ protocol, useBinaryProtocol }) => {
  test('publishes to and reads the history of this server', async () => {
    const rest = clientOf(app, useBinaryProtocol, { key: app.keys[0]!.keyStr })
    const channel = rest.channels.get(`sandbox-${protocol}`)
    await channel.publish('greeting', 'hello')
    const page = await channel.history()
    expect(page.items.map((m) => [m.name, m.data])).toEqual([['greeting', 'hello']])
    const members = await rest.channels.get('persisted:presence_fixtures').presence.get()
    expect(members.items.map((m) => m.clientId)).toEqual(['client_string'])
  })

  test('every key echoes the capability string a token request for that key returns', async () => {
    for (const key of app.keys) {
      const rest = clientOf(app, useBinaryProtocol, { key: key.keyStr })
      const token = await rest.auth.requestToken()
      expect(token.capability).toBe(key.capability)
      // asking for exactly the echoed capability gives it back unchanged
      expect((await rest.auth.requestToken({ capability: key.capability })).capability).toBe(key.capability)
    }
    // operations come back sorted, whatever order they were sent in
    expect(JSON.parse(app.keys[1]!.capability)['pushenabled:*']).toEqual(['publish', 'push-subscribe', 'subscribe'])
    expect(app.keys[3]!.capability).toBe('{"*":["subscribe"]}')
  })
})

describe.each([
  { protocol: 'msgpack', useBinaryProtocol: true },
  { protocol: 'json', useBinaryProtocol: false },
])('the sandbox test hook _forceNack, over $protocol', ({ protocol, useBinaryProtocol }) => {
  test('a publish with _forceNack=true is refused with 40099 on a sandbox app, and nothing is stored', async () => {
    const rest = clientOf(app, useBinaryProtocol, { key: app.keys[0]!.keyStr })
    const channel = rest.channels.get(`force-nack-${protocol}`)
    const err = await channel.publish({ name: 'event', data: 'data' }, { _forceNack: 'true' }).catch((e) => e)
    expect(err.code).toBe(40099)
    expect(err.statusCode).toBe(400)
    await channel.publish({ name: 'event', data: 'kept' }, { _forceNack: 'false' })
    expect((await channel.history()).items.map((m) => m.data)).toEqual(['kept'])
  })

  test('on an app not made by provisioning the parameter means nothing', async () => {
    const r = await gw.app.handle(
      new Request(`http://localhost/channels/force-nack-plain-${protocol}/messages?_forceNack=true`, {
        method: 'POST',
        headers: { authorization: `Basic ${btoa(gw.key)}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'event', data: 'data' }),
      }),
    )
    expect(r.status).toBe(201)
  })
})
