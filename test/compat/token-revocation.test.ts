/**
 * Token revocation driven with the official `ably` client (msgpack and JSON), as its own test
 * suite drives the hosted sandbox: a key with revocableTokens, `rest.auth.revokeTokens()`, tokens
 * refused with 40141 afterwards (and renewed by clients that can), event streams of revoked
 * tokens ended.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import * as Ably from 'ably'
import { ablyError } from '../helpers/ably'
import { createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { clientOf, provisionApp, type ProvisionedApp } from '../helpers/sandbox'
import { expectError } from '../helpers/errors'
import { messages, openSse } from '../helpers/sse'
import { makeJwt } from '../helpers/tokens'

let gw: TestGateway
let base: string
let app: ProvisionedApp
/** Key 4 of the test app has revocableTokens; key 0 has not. */
let revocable: ProvisionedApp['keys'][number]
beforeAll(async () => {
  gw = await createTestGateway({ sandboxProvisioning: true })
  base = listen(gw)
  app = await provisionApp(base)
  revocable = app.keys[4]!
})
afterAll(async () => {
  await gw.close()
})

let seq = 0
const fresh = (what: string) => `${what}-${++seq}-${Math.random().toString(36).slice(2, 8)}`

/** Revocations apply to tokens issued strictly before `issuedBefore`: let the clock move on first. */
const tick = () => Bun.sleep(3)

/** A raw request with a token, as any HTTP client would send it. */
const withToken = (token: string, path = '/channels/revocation-probe/messages') =>
  fetch(`${base}${path}`, { headers: { authorization: `Bearer ${Buffer.from(token).toString('base64')}` } })

describe.each([
  { protocol: 'msgpack', useBinaryProtocol: true },
  { protocol: 'json', useBinaryProtocol: false },
])('ably-js over $protocol', ({ useBinaryProtocol }) => {
  let rest: Ably.Rest
  beforeAll(() => {
    rest = clientOf(app, useBinaryProtocol, { key: revocable.keyStr })
  })
  const tokenClient = (tokenDetails: Ably.TokenDetails) => clientOf(app, useBinaryProtocol, { tokenDetails })

  test('revokeTokens by clientId: one result per target, an unknown target type failing alone', async () => {
    const [alice, bob] = [fresh('alice'), fresh('bob')]
    const aliceToken = await rest.auth.requestToken({ clientId: alice })
    const bobToken = await rest.auth.requestToken({ clientId: bob })
    // both work, and their principals are in the gateway's cache when the revocation comes
    await tokenClient(aliceToken).channels.get('before').publish('m', 'a')
    await tokenClient(bobToken).channels.get('before').publish('m', 'b')
    await tick()

    const result = await rest.auth.revokeTokens([
      { type: 'clientId', value: alice },
      { type: 'invalidType', value: 'abc' },
    ])
    expect([result.successCount, result.failureCount]).toEqual([1, 1])
    const [ok, failed] = result.results as [Ably.TokenRevocationSuccessResult, Ably.TokenRevocationFailureResult]
    expect(ok.target).toBe(`clientId:${alice}`)
    expect(typeof ok.issuedBefore).toBe('number')
    expect(ok.appliesAt).toBe(ok.issuedBefore)
    expect('error' in ok).toBe(false)
    expect(failed.target).toBe('invalidType:abc')
    expect([failed.error.statusCode, failed.error.code]).toEqual([400, 40000])

    // alice's token is refused as revoked; a client with nothing to renew it with reports that
    const refused = await withToken(aliceToken.token)
    expect((await expectError(refused, 401, 40141)).message).toContain(`clientId:${alice}`)
    const err = await ablyError(tokenClient(aliceToken).channels.get('after').publish('m', 'x'))
    expect([err.statusCode, err.code]).toEqual([403, 40171])
    // bob's is not concerned
    await tokenClient(bobToken).channels.get('after').publish('m', 'b')
  })

  test('tokens issued after the revocation work: a client with an authCallback authorizes again and carries on', async () => {
    const clientId = fresh('renewing')
    const tokens: Ably.TokenDetails[] = []
    const client = clientOf(app, useBinaryProtocol, {
      authCallback: (_params, cb) => {
        rest.auth.requestToken({ clientId }).then(
          (t) => cb(null, tokens[tokens.push(t) - 1]!),
          (e) => cb(e, null),
        )
      },
    })
    const channel = client.channels.get(fresh('renew'))
    await channel.publish('before', 'one')
    await tick()
    await rest.auth.revokeTokens([{ type: 'clientId', value: clientId }])
    await expectError(await withToken(tokens[0]!.token), 401, 40141)
    // (ably-js's own retry after a token error resends the old Authorization header, so renew explicitly)
    await client.auth.authorize()
    await channel.publish('after', 'two')
    expect(tokens).toHaveLength(2)
    expect((await channel.history({ direction: 'forwards' })).items.map((m) => m.name)).toEqual(['before', 'after'])
  })

  test('issuedBefore and allowReauthMargin: echoed, and the revocation applies 30 s later', async () => {
    const serverTime = await rest.time()
    const issuedBefore = serverTime - 20 * 60 * 1000
    const result = await rest.auth.revokeTokens([{ type: 'clientId', value: fresh('margin') }], {
      issuedBefore,
      allowReauthMargin: true,
    })
    const ok = result.results[0] as Ably.TokenRevocationSuccessResult
    expect(ok.issuedBefore).toBe(issuedBefore)
    expect(ok.appliesAt).toBeGreaterThanOrEqual(serverTime + 30_000)
  })

  test('revocationKey: a JWT with x-ably-revocation-key is revoked by its key, its neighbour is not', async () => {
    const [keyName, secret] = revocable.keyStr.split(':') as [string, string]
    const now = Math.floor(Date.now() / 1000)
    const jwt = (group: string) =>
      makeJwt(keyName, secret, {
        iat: now,
        exp: now + 600,
        'x-ably-capability': '{"*":["*"]}',
        'x-ably-revocation-key': group,
      })
    const [group, other] = [fresh('group'), fresh('other')]
    const [mine, theirs] = [jwt(group), jwt(other)]
    await clientOf(app, useBinaryProtocol, { token: mine }).channels.get('jwt').publish('m', 'one')
    await tick()
    const result = await rest.auth.revokeTokens([{ type: 'revocationKey', value: group }])
    expect(result.successCount).toBe(1)
    await expectError(await withToken(mine), 401, 40141)
    expect((await withToken(theirs)).status).toBe(200)
  })

  test('channel: revokes the tokens whose capability names that resource exactly', async () => {
    const room = fresh('room')
    const exact = await rest.auth.requestToken({ capability: { [`${room}:*`]: ['history'] } })
    const narrower = await rest.auth.requestToken({ capability: { [`${room}:lobby`]: ['history'] } })
    await tick()
    await rest.auth.revokeTokens([{ type: 'channel', value: `${room}:*` }])
    await expectError(await withToken(exact.token, `/channels/${room}:x/messages`), 401, 40141)
    expect((await withToken(narrower.token, `/channels/${room}:lobby/messages`)).status).toBe(200)
  })

  test('the event stream of a revoked token ends with an error event (40141); a new one is refused', async () => {
    const clientId = fresh('streamer')
    const token = await rest.auth.requestToken({ clientId })
    const url = `${base}/sse?v=1.2&channels=${encodeURIComponent(fresh('live'))}&accessToken=${encodeURIComponent(token.token)}`
    const stream = await openSse(url)
    expect(stream.status).toBe(200)
    await tick()
    await rest.auth.revokeTokens([{ type: 'clientId', value: clientId }])
    const events = await stream.until((e) => e.some((x) => x.event === 'error'))
    expect(messages(events)).toEqual([])
    expect(JSON.parse(events.find((e) => e.event === 'error')!.data)).toMatchObject({ code: 40141, statusCode: 401 })
    await stream.ended
    const again = await openSse(url)
    expect(again.status).toBe(401)
    await expectError(again.response, 401, 40141)
  })

  test('tokens of a key without revocableTokens cannot be revoked: 400 / 40000', async () => {
    const plain = clientOf(app, useBinaryProtocol, { key: app.keys[0]!.keyStr })
    const err = await ablyError(plain.auth.revokeTokens([{ type: 'clientId', value: 'anyone' }]))
    expect([err.statusCode, err.code]).toEqual([400, 40000])
    expect(err.message).toContain('revocableTokens')
  })
})
