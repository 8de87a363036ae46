/**
 * Credentials of live realtime connections with the official `ably` client (msgpack and JSON):
 * re-authentication with a new token (same connection), tokens renewed ahead of expiry when the
 * server asks, expiry of a token that was not renewed, capability changes on re-auth, a revoked
 * key and revoked tokens ending their connections.
 */
import { describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { ACCESS_TOKEN, APP_ID, addKey } from '../helpers/gateway'
import {
  authCallbackOf,
  collect,
  connectedClient,
  cutSocket,
  FORMATS,
  fresh,
  reach,
  realtimeClient,
  realtimeGateway,
} from '../helpers/realtime'

/** Tokens live this long in these tests; the server asks for a new one this long before expiry. */
const TTL = 3000
const LEAD = 1000

const rt = realtimeGateway({ tokenRenewLeadMs: LEAD })

/** An authCallback minting tokens of `key` with these token params (and its calls). */
const minter = (params: Ably.TokenParams, key = rt.gw.key) =>
  authCallbackOf(() => rt.rest({ key }).auth.requestToken(params))

/** The connection's `update` events (CONNECTED again on the same connection). */
function updates(client: Ably.Realtime) {
  const seen: Ably.ConnectionStateChange[] = []
  client.connection.on('update', (c) => seen.push(c))
  return seen
}

/** Frames of one action the server would send to a connection are dropped (the client never sees them). */
function dropFrames(connectionId: string, action: number) {
  const conn = rt.gw.server!.realtime.connection(connectionId) as unknown as { send(pm: object): boolean }
  const send = conn.send.bind(conn)
  conn.send = (pm: object) => ((pm as { action?: number }).action === action ? true : send(pm))
}

describe.each(FORMATS)('ably-js Realtime over %s', (_format, binary) => {
  test('auth.authorize(): a new token on the same connection (AUTH, then CONNECTED with the same id)', async () => {
    const m = minter({ clientId: 'alice' })
    const client = await connectedClient(rt.port, { authCallback: m.authCallback }, binary)
    const id = client.connection.id!
    const seen = updates(client)
    const ch = client.channels.get(fresh('reauth'))
    const got = await collect(ch)
    await client.auth.authorize({ clientId: 'alice' })
    await reach(client.connection, 'connected')
    for (let i = 0; i < 100 && seen.length === 0; i++) await Bun.sleep(10)
    expect(seen.length).toBe(1)
    expect(client.connection.id).toBe(id)
    expect(m.calls.length).toBe(2)
    await ch.publish('n', 'after reauth')
    expect((await got.until(1))[0]!.clientId).toBe('alice')
    expect(ch.state).toBe('attached')
  })

  test('re-auth with a token of another API key of the app: the connection resumes with that token', async () => {
    const other = await addKey(rt.gw, `other-${fresh('k')}`)
    let useOther = false
    const m = authCallbackOf(() =>
      rt.rest({ key: useOther ? other : rt.gw.key }).auth.requestToken({ clientId: 'alice' }),
    )
    const client = await connectedClient(rt.port, { authCallback: m.authCallback }, binary)
    const id = client.connection.id!
    const seen = updates(client)
    useOther = true
    await client.auth.authorize({ clientId: 'alice' })
    for (let i = 0; i < 100 && seen.length === 0; i++) await Bun.sleep(10)
    expect(seen.length).toBe(1)
    const ch = client.channels.get(fresh('rekeyed'))
    const got = await collect(ch)
    cutSocket(rt.gw, id)
    await reach(client.connection, 'disconnected')
    await reach(client.connection, 'connected')
    expect(client.connection.id).toBe(id)
    expect(client.connection.errorReason).toBeNull()
    await rt.rest().channels.get(ch.name).publish('n', 'after resume')
    expect((await got.until(1))[0]!.data).toBe('after resume')
  })

  test('re-auth to a capability without an attached channel: that channel fails with 40160, others go on', async () => {
    const keep = fresh('keep')
    const lose = fresh('lose')
    let capability = JSON.stringify({ [keep]: ['*'], [lose]: ['*'] })
    const { authCallback } = authCallbackOf(() => rt.rest().auth.requestToken({ capability }))
    const client = await connectedClient(rt.port, { authCallback }, binary)
    const kept = client.channels.get(keep)
    const lost = client.channels.get(lose)
    await kept.attach()
    await lost.attach()
    capability = JSON.stringify({ [keep]: ['*'] })
    const failed = reach(lost, 'failed', 5000, [])
    await client.auth.authorize()
    const reason = await failed
    expect([reason?.code, reason?.statusCode]).toEqual([40160, 401])
    expect([kept.state, client.connection.state]).toEqual(['attached', 'connected'])
  })

  test('re-auth adding publish to a channel attached subscribe-only: publishing is then accepted (reauthCapabilityUpgradeAddPublish)', async () => {
    const name = fresh('widen')
    let capability = JSON.stringify({ [name]: ['subscribe'] })
    const { authCallback } = authCallbackOf(() => rt.rest().auth.requestToken({ clientId: 'wid', capability }))
    const client = await connectedClient(rt.port, { authCallback, clientId: 'wid' }, binary)
    const ch = client.channels.get(name)
    const got = await collect(ch)
    expect(
      (
        await ch.publish('n', 'refused').then(
          () => undefined,
          (e: Ably.ErrorInfo) => e,
        )
      )?.code,
    ).toBe(40160)
    capability = JSON.stringify({ [name]: ['subscribe', 'publish'] })
    const seen = updates(client)
    await client.auth.authorize({ clientId: 'wid', capability })
    expect(seen.length).toBe(1)
    expect(ch.state).toBe('attached')
    await ch.publish('n', 'accepted')
    expect((await got.until(1)).map((m) => m.data)).toEqual(['accepted'])
    // and narrowed again: still attached and receiving, publishing refused
    capability = JSON.stringify({ [name]: ['subscribe'] })
    await client.auth.authorize({ clientId: 'wid', capability })
    expect(
      (
        await ch.publish('n', 'refused again').then(
          () => undefined,
          (e: Ably.ErrorInfo) => e,
        )
      )?.code,
    ).toBe(40160)
    await rt.rest().channels.get(name).publish('n', 'from rest')
    expect((await got.until(2)).map((m) => m.data)).toEqual(['accepted', 'from rest'])
    expect([ch.state, client.connection.state]).toEqual(['attached', 'connected'])
  })

  test('re-auth with a token of another clientId: the connection fails with 40102', async () => {
    let clientId = 'first'
    const { authCallback } = authCallbackOf(async () => (await rt.rest().auth.requestToken({ clientId })).token)
    const client = await connectedClient(rt.port, { authCallback }, binary)
    clientId = 'second'
    const failed = reach(client.connection, 'failed', 5000, [])
    await client.auth.authorize().catch(() => undefined)
    expect((await failed)?.code).toBe(40102)
  })

  test('the server asks for a new token before expiry: renewed through authCallback, same connection, no gap', async () => {
    const m = minter({ ttl: TTL })
    const client = await connectedClient(rt.port, { authCallback: m.authCallback }, binary)
    const id = client.connection.id!
    const name = fresh('renew')
    const got = await collect(client.channels.get(name))
    const disconnects: Ably.ConnectionStateChange[] = []
    client.connection.on('disconnected', (c) => disconnects.push(c))
    // two renewals: AUTH arrives LEAD before each expiry
    const pub = rt.rest().channels.get(name)
    let i = 0
    while (m.calls.length < 3) {
      await pub.publish('n', `m${i++}`)
      await Bun.sleep(100)
    }
    await pub.publish('n', 'last')
    const all = await got.until(i + 1)
    expect(all.map((x) => x.data)).toEqual([...Array.from({ length: i }, (_, k) => `m${k}`), 'last'])
    expect(disconnects).toEqual([])
    expect(client.connection.id).toBe(id)
  })

  test('a token that expires unrenewed: DISCONNECTED 40142, the client renews and resumes the same connection', async () => {
    const m = minter({ ttl: TTL })
    const client = await connectedClient(rt.port, { authCallback: m.authCallback }, binary)
    const id = client.connection.id!
    const name = fresh('expire')
    const got = await collect(client.channels.get(name))
    dropFrames(id, 17) // the client never hears the server's AUTH request
    const disconnected = reach(client.connection, 'disconnected', TTL + 3000)
    const reason = await disconnected
    expect([reason?.code, reason?.statusCode]).toEqual([40142, 401])
    await reach(client.connection, 'connected')
    expect(client.connection.id).toBe(id)
    expect(m.calls.length).toBe(2)
    await rt.rest().channels.get(name).publish('n', 'after expiry')
    expect((await got.until(1)).map((x) => x.data)).toEqual(['after expiry'])
  })

  test('a token literal that outlives the lead: the AUTH request of the server fails the client (40171, its own verdict)', async () => {
    const token = await rt.rest().auth.requestToken({ ttl: TTL })
    const client = await connectedClient(rt.port, { token: token.token }, binary)
    const reason = await reach(client.connection, 'failed', TTL + 3000, [])
    expect([reason?.code, reason?.statusCode]).toEqual([40171, 403])
  })

  test('a token that expires unrenewed with no way to renew it: DISCONNECTED 40142, then the client fails', async () => {
    const token = await rt.rest().auth.requestToken({ ttl: TTL })
    const client = await connectedClient(rt.port, { token: token.token }, binary)
    dropFrames(client.connection.id!, 17)
    const disconnected = reach(client.connection, 'disconnected', TTL + 3000)
    expect((await disconnected)?.code).toBe(40142)
    const reason = await reach(client.connection, 'failed', 5000, [])
    expect([reason?.code, reason?.statusCode]).toEqual([40171, 403])
  })

  test('an expired token at connect with an authCallback: a new one is fetched and the client connects', async () => {
    const r = rt.rest()
    const expired = await r.auth.requestToken({ ttl: 1 })
    await Bun.sleep(5)
    const { authCallback, calls } = authCallbackOf(() => (calls.length === 1 ? expired.token : r.auth.requestToken()))
    const client = realtimeClient(rt.port, { authCallback }, binary)
    await reach(client.connection, 'connected')
    expect(calls.length).toBe(2)
  })

  test('revoking the key ends its connections with 40131 (FAILED); other keys carry on', async () => {
    const keyId = fresh('revoked')
    const key = await addKey(rt.gw, keyId)
    const victim = await connectedClient(rt.port, { key }, binary)
    const bystander = await connectedClient(rt.port, { key: rt.gw.key }, binary)
    const failed = reach(victim.connection, 'failed', 5000, [])
    const r = await fetch(`${rt.base}/v1/apps/${APP_ID}/keys/${keyId}/revoke`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ACCESS_TOKEN}` },
    })
    expect(r.status).toBe(200)
    const reason = await failed
    expect([reason?.code, reason?.statusCode]).toEqual([40131, 401])
    expect(await bystander.connection.ping()).toBeGreaterThanOrEqual(0)
  })

  test('token revocation ends the connections of revoked tokens; a client that can renew reconnects', async () => {
    const keyId = fresh('revocable')
    const key = await addKey(rt.gw, keyId, { revocableTokens: true })
    const clientId = fresh('revokee')
    const renewing = minter({ clientId }, key)
    const canRenew = await connectedClient(rt.port, { authCallback: renewing.authCallback }, binary)
    const token = await rt.rest({ key }).auth.requestToken({ clientId })
    const cannot = await connectedClient(rt.port, { token: token.token }, binary)
    const other = await connectedClient(
      rt.port,
      { token: (await rt.rest({ key }).auth.requestToken({ clientId: 'other' })).token },
      binary,
    )
    await Bun.sleep(3) // revocations apply to tokens issued strictly before issuedBefore
    const failed = reach(cannot.connection, 'failed', 5000, [])
    const disconnected = new Promise<Ably.ErrorInfo | undefined>((resolve) =>
      canRenew.connection.once('disconnected', (c) => resolve(c.reason)),
    )
    await rt.rest({ key }).auth.revokeTokens([{ type: 'clientId', value: clientId }])
    // the server ends both with 40141; the client that cannot renew then fails with its own 40171
    expect((await disconnected)?.code).toBe(40141)
    const reason = await failed
    expect([reason?.code, reason?.statusCode]).toEqual([40171, 403])
    await reach(canRenew.connection, 'connected')
    expect(renewing.calls.length).toBe(2)
    expect(other.connection.state).toBe('connected')
  })
})
