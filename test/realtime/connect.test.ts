/**
 * Connecting the official `ably` client's Realtime (msgpack and JSON) over a real port: every way
 * of authenticating (key, token, authCallback with a TokenRequest or a token, JWT), refusals,
 * the connection details it is given, ping and close.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { APP_ID, addKey } from '../helpers/gateway'
import {
  authCallbackOf,
  connectedClient,
  FORMATS,
  fresh,
  reach,
  realtimeClient,
  realtimeGateway,
} from '../helpers/realtime'
import { makeJwt } from '../helpers/tokens'

const rt = realtimeGateway({ realtimeMaxIdleIntervalMs: 1000 })
let limitedKey: string
beforeAll(async () => {
  limitedKey = await addKey(rt.gw, 'limited', { capability: { 'allowed:*': ['publish', 'subscribe'] } })
})

/** Publishes on a fresh channel and reads the message back: the connection really works. */
async function roundTrip(client: Ably.Realtime) {
  const ch = client.channels.get(fresh('allowed:rt'))
  const got = new Promise<Ably.InboundMessage>((resolve) => ch.subscribe(resolve))
  await ch.attach()
  await ch.publish('hello', 'world')
  return got
}

describe.each(FORMATS)('ably-js Realtime over %s', (_format, binary) => {
  test('connects with a key: CONNECTED with connection details, a connection key of this connection', async () => {
    const client = await connectedClient(rt.port, { key: rt.gw.key }, binary)
    const { connection } = client
    expect(connection.id).toMatch(/^[A-Za-z0-9_-]+$/)
    expect(connection.key!.startsWith(`${connection.id}!`)).toBe(true)
    expect(client.auth.clientId).toBeUndefined()
    const m = await roundTrip(client)
    expect([m.name, m.data, m.connectionId]).toEqual(['hello', 'world', connection.id])
    expect(m.id).toBe(`${connection.id}:0:0`)
  })

  test('a key with a clientId option: the identity is stamped on what it publishes', async () => {
    const client = await connectedClient(rt.port, { key: rt.gw.key, clientId: 'alice' }, binary)
    expect(client.auth.clientId).toBe('alice')
    expect((await roundTrip(client)).clientId).toBe('alice')
  })

  test('connects with a token (TokenDetails) and with a token string', async () => {
    const token = await rt.rest({ binary }).auth.requestToken({ clientId: 'bob' })
    const withDetails = await connectedClient(rt.port, { tokenDetails: token }, binary)
    expect(withDetails.auth.clientId).toBe('bob')
    expect((await roundTrip(withDetails)).clientId).toBe('bob')
    const withString = await connectedClient(rt.port, { token: token.token }, binary)
    expect((await roundTrip(withString)).clientId).toBe('bob')
  })

  test('connects with an authCallback giving a signed TokenRequest, and one giving a token', async () => {
    const r = rt.rest({ binary })
    const viaRequest = authCallbackOf(() => r.auth.createTokenRequest({ clientId: 'carol' }))
    const client = await connectedClient(rt.port, { authCallback: viaRequest.authCallback }, binary)
    expect(viaRequest.calls.length).toBe(1)
    expect(client.auth.clientId).toBe('carol')
    expect((await roundTrip(client)).clientId).toBe('carol')
    const viaToken = await connectedClient(
      rt.port,
      { authCallback: authCallbackOf(() => r.auth.requestToken({ clientId: 'dan' })).authCallback },
      binary,
    )
    expect((await roundTrip(viaToken)).clientId).toBe('dan')
  })

  test('connects with a JWT (its capability and clientId apply), given as a token or by authCallback', async () => {
    const [keyName, secret] = rt.gw.key.split(':') as [string, string]
    const now = Math.floor(Date.now() / 1000)
    const jwt = () =>
      makeJwt(keyName, secret, {
        iat: now,
        exp: now + 3600,
        'x-ably-capability': JSON.stringify({ 'allowed:*': ['*'] }),
        'x-ably-clientId': 'erin',
      })
    const direct = await connectedClient(rt.port, { token: jwt() }, binary)
    expect(direct.auth.clientId).toBe('erin')
    expect((await roundTrip(direct)).clientId).toBe('erin')
    // the JWT's capability holds: another channel is refused
    const other = direct.channels.get(fresh('elsewhere'))
    const err = (await other.attach().catch((e) => e)) as Ably.ErrorInfo
    expect([err.code, err.statusCode]).toEqual([40160, 401])
    const viaCallback = await connectedClient(rt.port, { authCallback: (_p, cb) => cb(null, jwt()) }, binary)
    expect((await roundTrip(viaCallback)).clientId).toBe('erin')
  })

  test('a wrong key secret: the connection FAILS with 40101 (no retry loop)', async () => {
    const client = realtimeClient(rt.port, { key: `${APP_ID}.rootkey:not-the-secret` }, binary)
    const reason = await reach(client.connection, 'failed', 8000, [])
    expect([reason?.code, reason?.statusCode]).toEqual([40101, 401])
  })

  test('an unknown key: FAILED with 40400 / 401, and a key of no app with 40101 / 401, as the hosted service answers', async () => {
    const client = realtimeClient(rt.port, { key: `${APP_ID}.nosuchkey:whatever` }, binary)
    const reason = await reach(client.connection, 'failed', 8000, [])
    expect([reason?.code, reason?.statusCode]).toEqual([40400, 401])
    const other = realtimeClient(rt.port, { key: 'invalid.key:secret' }, binary)
    const why = await reach(other.connection, 'failed', 8000, [])
    expect([why?.code, why?.statusCode]).toEqual([40101, 401])
  })

  test('a clientId that contradicts the token: FAILED with 40102, from the server or the client', async () => {
    const token = await rt.rest({ binary }).auth.requestToken({ clientId: 'frank' })
    // the client checks this itself when it knows the token's clientId: give the bare string
    const client = realtimeClient(rt.port, { token: token.token, clientId: 'mallory' }, binary)
    const reason = await reach(client.connection, 'failed', 8000, [])
    expect(reason?.code).toBe(40102)
  })

  test('capability refusal: attaching a channel outside the key capability fails that channel with 40160', async () => {
    const client = await connectedClient(rt.port, { key: limitedKey }, binary)
    const denied = client.channels.get(fresh('forbidden'))
    const err = (await denied.attach().catch((e) => e)) as Ably.ErrorInfo
    expect([err.code, err.statusCode]).toEqual([40160, 401])
    expect(denied.state).toBe('failed')
    // the connection and its other channels go on
    expect(client.connection.state).toBe('connected')
    expect((await roundTrip(client)).data).toBe('world')
  })

  test('capability refusal on publish: NACK 40160, and the channel stays usable for what is allowed', async () => {
    const client = await connectedClient(
      rt.port,
      { key: await addKey(rt.gw, fresh('subonly'), { capability: { '*': ['subscribe'] } }) },
      binary,
    )
    const ch = client.channels.get(fresh('ro'))
    await ch.attach()
    const err = (await ch.publish('x', 'y').catch((e) => e)) as Ably.ErrorInfo
    expect([err.code, err.statusCode]).toEqual([40160, 401])
    expect(ch.state).toBe('attached')
    expect(client.connection.state).toBe('connected')
  })

  test('ping(): answered by a HEARTBEAT echoing its id', async () => {
    const client = await connectedClient(rt.port, { key: rt.gw.key }, binary)
    const rtt = await client.connection.ping()
    expect(typeof rtt).toBe('number')
    expect(rtt).toBeGreaterThanOrEqual(0)
  })

  test('close(): CLOSED from the server, and the node forgets the connection', async () => {
    const client = await connectedClient(rt.port, { key: rt.gw.key }, binary)
    const id = client.connection.id!
    expect(rt.gw.server!.realtime.connection(id)).toBeDefined()
    client.close()
    await reach(client.connection, 'closed')
    for (let i = 0; i < 200 && rt.gw.server!.realtime.connection(id); i++) await Bun.sleep(10)
    expect(rt.gw.server!.realtime.connection(id)).toBeUndefined()
  })
})
