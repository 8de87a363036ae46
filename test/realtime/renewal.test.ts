/**
 * Token expiry at the default TOKEN_RENEW_LEAD_MS (30 s), with the official client, as ably-js's
 * own suites expect of the hosted service (`auth_token_expires`,
 * `auth_tokenDetails_expiry_with_authcallback`, `auth_token_string_expiry_with_token`,
 * `token_renewal`): a token with no more than the lead left gets no AUTH request; it runs until it
 * expires, then DISCONNECTED 40142 / 401. A client that can renew resumes the same connection with a
 * new token (nothing lost); one with a token literal fails (40171, its own verdict). A token valid
 * longer than the runtime's longest timer (24.8 days) neither expires at once nor is asked to renew.
 */
import { describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { ROOT_KEY } from '../helpers/gateway'
import { makeJwt } from '../helpers/tokens'
import { authCallbackOf, collect, connectedClient, FORMATS, fresh, reach, realtimeGateway } from '../helpers/realtime'

const rt = realtimeGateway()
const TOKEN_TTL_MS = 2000
const [KEY_NAME, SECRET] = ROOT_KEY.split(':') as [string, string]

/** A JWT as a customer's auth server mints it, valid `ttlS` seconds (without a capability: the key's). */
const jwt = (ttlS: number, claims: Record<string, unknown> = {}) => {
  const now = Math.floor(Date.now() / 1000)
  return makeJwt(KEY_NAME, SECRET, { iat: now, exp: now + ttlS, ...claims })
}

/** Every state change of the connection after now. */
function changes(client: Ably.Realtime) {
  const seen: Ably.ConnectionStateChange[] = []
  client.connection.on((c) => seen.push(c))
  return seen
}

const TRANSPORTS = [
  ...FORMATS.map(([f, b]) => [`WebSocket, ${f}`, b, undefined] as const),
  ['comet', false, ['comet']] as const,
]

describe.each(TRANSPORTS)('ably-js Realtime over %s', (_name, binary, transports) => {
  const opts = transports ? { transports: [...transports] } : {}

  test('tokens shorter-lived than the lead: no AUTH; each expires into DISCONNECTED 40142 and the client resumes with a new one', async () => {
    const m = authCallbackOf(() => rt.rest().auth.requestToken({ ttl: TOKEN_TTL_MS }))
    const client = await connectedClient(rt.port, { authCallback: m.authCallback, ...opts }, binary)
    const id = client.connection.id!
    const seen = changes(client)
    const name = fresh('expiring')
    const got = await collect(client.channels.get(name))
    const pub = rt.rest().channels.get(name)
    let i = 0
    while (m.calls.length < 3) {
      await pub.publish('n', `m${i++}`)
      await Bun.sleep(50)
    }
    await reach(client.connection, 'connected')
    await pub.publish('n', 'last')
    const all = await got.until(i + 1)
    expect(all.map((x) => x.data)).toEqual([...Array.from({ length: i }, (_, k) => `m${k}`), 'last'])
    const disconnects = seen.filter((c) => c.current === 'disconnected')
    // (a busy machine may see a third expiry before this line)
    expect(disconnects.length).toBeGreaterThanOrEqual(2)
    for (const d of disconnects) expect([d.reason?.code, d.reason?.statusCode]).toEqual([40142, 401])
    expect(seen.filter((c) => c.current === 'failed' || c.current === 'suspended')).toEqual([])
    expect(client.connection.id).toBe(id)
  })

  test('a JWT without capability, from authCallback: it expires into DISCONNECTED 40142 and the next one connects (token_renewal)', async () => {
    const m = authCallbackOf(() => (m.calls.length === 1 ? jwt(TOKEN_TTL_MS / 1000) : jwt(3600)))
    const client = await connectedClient(rt.port, { authCallback: m.authCallback, ...opts }, binary)
    const reason = await reach(client.connection, 'disconnected', TOKEN_TTL_MS + 5000)
    expect([reason?.code, reason?.statusCode]).toEqual([40142, 401])
    await reach(client.connection, 'connected')
    expect(m.calls.length).toBe(2)
  })

  test('a token literal shorter-lived than the lead: connected until it expires, DISCONNECTED 40142 / 401, then FAILED 40171', async () => {
    const token = await rt.rest().auth.requestToken({ ttl: TOKEN_TTL_MS })
    const client = await connectedClient(rt.port, { tokenDetails: token, ...opts }, binary)
    const seen = changes(client)
    const reason = await reach(client.connection, 'failed', TOKEN_TTL_MS + 5000, [])
    expect([reason?.code, reason?.statusCode]).toEqual([40171, 403])
    // (it tries to connect in between, finding it has no way to a new token)
    const states = seen.filter((c) => c.current !== 'connecting')
    expect(states.map((c) => [c.current, c.reason?.code, c.reason?.statusCode])).toEqual([
      ['disconnected', 40142, 401],
      ['failed', 40171, 403],
    ])
  })

  test('a JWT valid for 30 days: the connection stays, one token, no AUTH request', async () => {
    const m = authCallbackOf(() => jwt(30 * 86_400, { 'x-ably-capability': '{"*":["*"]}' }))
    const client = await connectedClient(rt.port, { authCallback: m.authCallback, ...opts }, binary)
    const seen = changes(client)
    const name = fresh('long')
    const got = await collect(client.channels.get(name))
    // before the fix the expiry timer fired at once: DISCONNECTED 40142 within milliseconds, again and again
    await Bun.sleep(1500)
    await rt.rest().channels.get(name).publish('n', 'still here')
    expect((await got.until(1)).map((x) => x.data)).toEqual(['still here'])
    expect([seen, m.calls.length, client.connection.state]).toEqual([[], 1, 'connected'])
  })
})
