import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { APP_ID, TestClock, basic, createTestGateway, type TestGateway } from '../helpers/gateway'
import { makeJwt, signedTokenRequest } from '../helpers/tokens'
import { expectError } from '../helpers/errors'

const KEY_NAME = 'testapp.rootkey'
const SECRET = 's3cr3t-root-secret'
const LIMITED = 'testapp.limited:limited-secret'

let gw: TestGateway
const clock = new TestClock()
beforeAll(async () => {
  gw = await createTestGateway({}, clock)
  await gw.backend.control.createKey({
    appId: APP_ID,
    id: 'limited',
    name: 'limited',
    secret: 'limited-secret',
    capability: { 'pub:*': ['publish', 'subscribe'], open: ['subscribe'] },
    status: 0,
    revocableTokens: false,
    created: 0,
    modified: 0,
  })
})
afterAll(async () => {
  await gw.close()
})

const requestToken = (keyName: string, json: unknown, key: string | null = gw.key) =>
  gw.request(`/keys/${keyName}/requestToken`, { method: 'POST', json, key })
const bearer = (token: string, base64 = true) => ({
  authorization: `Bearer ${base64 ? Buffer.from(token).toString('base64') : token}`,
})

describe('Basic auth', () => {
  test('missing or wrong credentials are 401 / 40101', async () => {
    await expectError(await gw.request('/channels/a/messages', { key: null }), 401, 40101)
    await expectError(await gw.request('/channels/a/messages', { key: `${KEY_NAME}:wrong` }), 401, 40101)
    await expectError(
      await gw.request('/channels/a/messages', { key: null, headers: { authorization: 'Digest abc' } }),
      401,
      40101,
    )
  })
  test('a key name the app does not have is 401 / 40400, one of no app 401 / 40101, as the hosted service answers (Basic, requestToken, JWT)', async () => {
    await expectError(await gw.request('/channels/a/messages', { key: 'testapp.nokey:whatever' }), 401, 40400)
    await expectError(await gw.request('/channels/a/messages', { key: 'noapp.nokey:whatever' }), 401, 40101)
    await expectError(await requestToken('testapp.nokey', {}, 'testapp.nokey:whatever'), 401, 40400)
    await expectError(
      await requestToken('testapp.nokey', signedTokenRequest('testapp.nokey', 'whatever'), null),
      401,
      40400,
    )
    const now = Math.floor(clock.now() / 1000)
    const jwt = makeJwt('testapp.invalid', 'invalidinvalid', { iat: now, exp: now + 60 })
    await expectError(await gw.request('/channels/a/messages', { key: null, headers: bearer(jwt) }), 401, 40400)
    // a JWT naming a key of no app: 40400 with status 404 (the hosted service's answer)
    const noApp = makeJwt('invalid.invalid', 'invalidinvalid', { iat: now, exp: now + 60 })
    await expectError(await gw.request('/channels/a/messages', { key: null, headers: bearer(noApp) }), 404, 40400)
  })
  test("an embedded token: a JWT of the customer's own wrapping an Ably token (x-ably-token) authenticates as that token", async () => {
    const issued = (await (await requestToken(KEY_NAME, { capability: '{"pub:*":["publish"]}' })).json()) as {
      token: string
    }
    const now = Math.floor(clock.now() / 1000)
    const wrap = (where: 'header' | 'claim', token: string) => {
      const head = { typ: 'JWT', alg: 'HS256', ...(where === 'header' ? { 'x-ably-token': token } : {}) }
      const body = { iat: now, exp: now + 60, ...(where === 'claim' ? { 'x-ably-token': token } : {}) }
      const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url')
      return `${b64(head)}.${b64(body)}.signed-by-the-customers-own-secret`
    }
    for (const where of ['header', 'claim'] as const) {
      const jwt = wrap(where, issued.token)
      const ok = await gw.request('/channels/pub:embedded/messages', {
        method: 'POST',
        key: null,
        headers: bearer(jwt),
        json: { data: 'x' },
      })
      expect(ok.status).toBe(201)
      // the wrapped token's capability holds
      await expectError(
        await gw.request('/channels/other/messages', {
          method: 'POST',
          key: null,
          headers: bearer(jwt),
          json: { data: 'x' },
        }),
        403,
        40160,
      )
    }
    // the wrapper may be a compact JWE (its claims encrypted with the customer's own secret): the
    // embedded token in its readable protected header authenticates; a JWE embedding nothing is refused
    const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url')
    const jwe = (head: object) => `${b64({ alg: 'dir', enc: 'A256GCM', ...head })}..aXY.Y2lwaGVy.dGFn`
    const encrypted = jwe({ 'x-ably-token': issued.token })
    expect(
      (
        await gw.request('/channels/pub:embedded/messages', {
          method: 'POST',
          key: null,
          headers: bearer(encrypted),
          json: { data: 'x' },
        })
      ).status,
    ).toBe(201)
    await expectError(
      await gw.request('/channels/a/messages', { key: null, headers: bearer(jwe({ kid: KEY_NAME })) }),
      401,
      40144,
    )
    // a forged inner token is refused as that token would be; one wrapper inside another is refused
    await expectError(
      await gw.request('/channels/a/messages', { key: null, headers: bearer(wrap('header', 'garbage')) }),
      401,
      40143,
    )
    await expectError(
      await gw.request('/channels/a/messages', {
        key: null,
        headers: bearer(wrap('header', wrap('header', issued.token))),
      }),
      401,
      40144,
    )
  })
  test('the key works as ?key= query parameter', async () => {
    const r = await gw.request(`/channels/a/messages?key=${encodeURIComponent(gw.key)}`, { key: null })
    expect(r.status).toBe(200)
  })
  test('capabilities of the key are enforced per operation and channel (403 / 40160)', async () => {
    expect(
      (await gw.request('/channels/pub:x/messages', { method: 'POST', json: { data: 'ok' }, key: LIMITED })).status,
    ).toBe(201)
    await expectError(
      await gw.request('/channels/other/messages', { method: 'POST', json: { data: 'no' }, key: LIMITED }),
      403,
      40160,
    )
    await expectError(await gw.request('/channels/pub:x/messages', { key: LIMITED }), 403, 40160)
    await expectError(await gw.request('/channels/open', { key: LIMITED }), 403, 40160)
    await expectError(await gw.request('/stats', { key: LIMITED }), 403, 40160)
    expect((await gw.request('/channels/open/presence', { key: LIMITED })).status).toBe(200)
  })
})

describe('requestToken', () => {
  test('unsigned request with Basic auth returns TokenDetails with a 60 min default ttl', async () => {
    const r = await requestToken(KEY_NAME, {})
    expect(r.status).toBe(200)
    const d = (await r.json()) as any
    expect(d).toMatchObject({ keyName: KEY_NAME, capability: '{"*":["*"]}' })
    expect(d.expires - d.issued).toBe(3_600_000)
    expect(d.clientId).toBeUndefined()
    expect(typeof d.token).toBe('string')
  })
  test('capability is intersected with the key and canonical; clientId is kept', async () => {
    const r = await requestToken(
      'testapp.limited',
      { capability: JSON.stringify({ 'pub:a': ['*'], open: ['subscribe', 'publish'] }), clientId: 'bob', ttl: 1000 },
      LIMITED,
    )
    const d = (await r.json()) as any
    expect(d.capability).toBe('{"open":["subscribe"],"pub:a":["publish","subscribe"]}')
    expect(d.clientId).toBe('bob')
    expect(d.expires - d.issued).toBe(1000)
  })
  test('an empty intersection is 401 / 40160', async () => {
    await expectError(
      await requestToken('testapp.limited', { capability: '{"elsewhere":["publish"]}' }, LIMITED),
      401,
      40160,
    )
  })
  test.each([
    ['ttl over 24 h', { ttl: 86_400_001 }, 400, 40003],
    ['negative ttl', { ttl: -5 }, 400, 40003],
    ['non-numeric ttl', { ttl: 'soon' }, 400, 40003],
    ['invalid capability', { capability: '{"a":["fly"]}' }, 400, 40000],
    ['capability not JSON', { capability: '{a' }, 400, 40000],
    ['empty clientId', { clientId: '' }, 400, 40012],
  ])('%s is refused', async (_why, body, status, code) => {
    await expectError(await requestToken(KEY_NAME, body), status, code)
  })
  test('unsigned request needs Basic auth of that key', async () => {
    await expectError(await requestToken(KEY_NAME, {}, null), 401, 40101)
    await expectError(await requestToken(KEY_NAME, {}, LIMITED), 401, 40101)
    const token = ((await (await requestToken(KEY_NAME, {})).json()) as any).token
    await expectError(
      await gw.request(`/keys/${KEY_NAME}/requestToken`, {
        method: 'POST',
        json: {},
        key: null,
        headers: bearer(token),
      }),
      401,
      40162,
    )
  })
  test('ttl may arrive as a numeric string', async () => {
    const d = (await (await requestToken(KEY_NAME, { ttl: '5000' })).json()) as any
    expect(d.expires - d.issued).toBe(5000)
  })

  describe('signed token requests', () => {
    test('a valid signed request needs no other credentials', async () => {
      const r = await requestToken(
        KEY_NAME,
        signedTokenRequest(KEY_NAME, SECRET, {
          clientId: 'carol',
          capability: '{"*":["subscribe"]}',
          timestamp: clock.now(),
        }),
        null,
      )
      expect(r.status).toBe(200)
      expect((await r.json()) as any).toMatchObject({ clientId: 'carol', capability: '{"*":["subscribe"]}' })
    })
    test('text/plain bodies are accepted', async () => {
      const r = await gw.request(`/keys/${KEY_NAME}/requestToken`, {
        method: 'POST',
        key: null,
        headers: { 'content-type': 'text/plain' },
        body: JSON.stringify(signedTokenRequest(KEY_NAME, SECRET, { timestamp: clock.now() })),
      })
      expect(r.status).toBe(200)
    })
    test('a stale timestamp is 401 / 40104', async () => {
      await expectError(
        await requestToken(
          KEY_NAME,
          signedTokenRequest(KEY_NAME, SECRET, { timestamp: clock.now() - 10 * 60_000 }),
          null,
        ),
        401,
        40104,
      )
    })
    test('a replayed nonce is 401 / 40105', async () => {
      const req = signedTokenRequest(KEY_NAME, SECRET, { timestamp: clock.now() })
      expect((await requestToken(KEY_NAME, req, null)).status).toBe(200)
      await expectError(await requestToken(KEY_NAME, req, null), 401, 40105)
    })
    test('a bad mac is 401 / 40101', async () => {
      const req = { ...signedTokenRequest(KEY_NAME, SECRET, { timestamp: clock.now() }), clientId: 'tampered' }
      await expectError(await requestToken(KEY_NAME, req, null), 401, 40101)
      await expectError(
        await requestToken(KEY_NAME, signedTokenRequest(KEY_NAME, 'wrong-secret', { timestamp: clock.now() }), null),
        401,
        40101,
      )
    })
  })
})

describe('token auth', () => {
  const token = async (body: Record<string, unknown>, key = gw.key, keyName = KEY_NAME) =>
    ((await (await requestToken(keyName, body, key)).json()) as any).token as string

  test('Bearer tokens work raw and base64-encoded', async () => {
    const t = await token({})
    expect((await gw.request('/channels/t1/messages', { key: null, headers: bearer(t, true) })).status).toBe(200)
    expect((await gw.request('/channels/t1/messages', { key: null, headers: bearer(t, false) })).status).toBe(200)
    expect((await gw.request(`/channels/t1/messages?accessToken=${encodeURIComponent(t)}`, { key: null })).status).toBe(
      200,
    )
  })
  test('token capability is enforced', async () => {
    const t = await token({ capability: '{"t2":["subscribe"]}' })
    await expectError(
      await gw.request('/channels/t2/messages', { method: 'POST', json: { data: 'x' }, key: null, headers: bearer(t) }),
      403,
      40160,
    )
    await expectError(await gw.request('/channels/t2/messages', { key: null, headers: bearer(t) }), 403, 40160)
  })
  test('an expired token is 401 / 40142', async () => {
    const t = await token({ ttl: 60_000 })
    expect((await gw.request('/channels/t3/messages', { key: null, headers: bearer(t) })).status).toBe(200)
    clock.advance(61_000)
    await expectError(await gw.request('/channels/t3/messages', { key: null, headers: bearer(t) }), 401, 40142)
  })
  test('a tampered token is refused', async () => {
    const t = await token({ capability: '{"t4":["subscribe"]}' })
    const parts = t.split('.')
    const forged = [
      parts[0],
      parts[1],
      Buffer.from(JSON.stringify({ i: 0, x: 9e15, c: '{"*":["*"]}', n: 'x' })).toString('base64url'),
      parts[3],
    ].join('.')
    await expectError(await gw.request('/channels/t4/messages', { key: null, headers: bearer(forged) }), 401, 40101)
    await expectError(
      await gw.request('/channels/t4/messages', { key: null, headers: bearer('not-a-token') }),
      401,
      40143,
    )
  })
  test('a token of a revoked key stops working', async () => {
    await gw.backend.control.createKey({
      appId: APP_ID,
      id: 'temp',
      name: 'temp',
      secret: 'temp-secret',
      capability: { '*': ['*'] },
      status: 0,
      revocableTokens: false,
      created: 0,
      modified: 0,
    })
    const t = await token({}, 'testapp.temp:temp-secret', 'testapp.temp')
    expect((await gw.request('/channels/t5/messages', { key: null, headers: bearer(t) })).status).toBe(200)
    const k = (await gw.backend.control.getKey('testapp.temp'))!
    await gw.backend.control.createKey({ ...k, status: 1 })
    await expectError(await gw.request('/channels/t5/messages', { key: null, headers: bearer(t) }), 401, 40131)
  })

  describe('clientId', () => {
    test('a token clientId is applied to published messages', async () => {
      const t = await token({ clientId: 'bob' })
      expect(
        (
          await gw.request('/channels/c1/messages', {
            method: 'POST',
            json: { data: 'x' },
            key: null,
            headers: bearer(t),
          })
        ).status,
      ).toBe(201)
      const items = (await (await gw.request('/channels/c1/messages')).json()) as any[]
      expect(items[0].clientId).toBe('bob')
    })
    test('a message clientId contradicting the token is refused and not stored', async () => {
      const t = await token({ clientId: 'bob' })
      await expectError(
        await gw.request('/channels/c2/messages', {
          method: 'POST',
          json: { data: 'x', clientId: 'mallory' },
          key: null,
          headers: bearer(t),
        }),
        400,
        40012,
      )
      expect(await (await gw.request('/channels/c2/messages')).json()).toEqual([])
    })
    test('X-Ably-ClientId identifies a Basic-auth client; it may not contradict a token', async () => {
      const header = { 'x-ably-clientid': Buffer.from('dave').toString('base64') }
      expect(
        (await gw.request('/channels/c3/messages', { method: 'POST', json: { data: 'x' }, headers: header })).status,
      ).toBe(201)
      expect(((await (await gw.request('/channels/c3/messages')).json()) as any[])[0].clientId).toBe('dave')
      await expectError(
        await gw.request('/channels/c3/messages', {
          method: 'POST',
          json: { data: 'x', clientId: 'erin' },
          headers: header,
        }),
        400,
        40012,
      )
      const t = await token({ clientId: 'bob' })
      await expectError(
        await gw.request('/channels/c3/messages', { key: null, headers: { ...bearer(t), ...header } }),
        401,
        40102,
      )
    })
    test('a wildcard token may publish as any clientId', async () => {
      const t = await token({ clientId: '*' })
      expect(
        (
          await gw.request('/channels/c4/messages', {
            method: 'POST',
            json: { data: 'x', clientId: 'frank' },
            key: null,
            headers: bearer(t),
          })
        ).status,
      ).toBe(201)
    })
  })
})

describe('JWT', () => {
  const now = () => Math.floor(clock.now() / 1000)
  test('an HS256 JWT signed with the key secret authenticates with its capability and clientId', async () => {
    const jwt = makeJwt(KEY_NAME, SECRET, {
      iat: now(),
      exp: now() + 600,
      'x-ably-capability': '{"j1":["publish","history"]}',
      'x-ably-clientId': 'jay',
    })
    expect(
      (
        await gw.request('/channels/j1/messages', {
          method: 'POST',
          json: { data: 'x' },
          key: null,
          headers: bearer(jwt),
        })
      ).status,
    ).toBe(201)
    const items = (await (
      await gw.request('/channels/j1/messages', { key: null, headers: bearer(jwt, false) })
    ).json()) as any[]
    expect(items[0].clientId).toBe('jay')
    await expectError(
      await gw.request('/channels/j2/messages', {
        method: 'POST',
        json: { data: 'x' },
        key: null,
        headers: bearer(jwt),
      }),
      403,
      40160,
    )
  })
  test('a JWT without x-ably-capability has the capability of its key (as the hosted service takes it)', async () => {
    const jwt = (key: string, secret: string, clientId?: string) =>
      makeJwt(key, secret, { iat: now(), exp: now() + 600, ...(clientId ? { 'x-ably-clientId': clientId } : {}) })
    const post = (channel: string, token: string) =>
      gw.request(`/channels/${channel}/messages`, {
        method: 'POST',
        json: { data: 'x' },
        key: null,
        headers: bearer(token),
      })
    expect((await post('any-channel', jwt(KEY_NAME, SECRET))).status).toBe(201)
    expect((await post('j5', jwt(KEY_NAME, SECRET, 'jo'))).status).toBe(201)
    const items = (await (await gw.request('/channels/j5/messages')).json()) as any[]
    expect(items[0].clientId).toBe('jo')
    const limited = jwt('testapp.limited', 'limited-secret')
    expect((await post('pub:a', limited)).status).toBe(201)
    await expectError(await post('other', limited), 403, 40160)
  })
  test('a JWT whose x-ably-clientId is longer than 256 characters is refused with 40012, as a clientId is elsewhere', async () => {
    const jwt = (clientId: string) =>
      makeJwt(KEY_NAME, SECRET, { iat: now(), exp: now() + 600, 'x-ably-clientId': clientId })
    const get = (token: string) => gw.request('/channels/j6/messages', { key: null, headers: bearer(token) })
    expect((await get(jwt('c'.repeat(256)))).status).toBe(200)
    await expectError(await get(jwt('c'.repeat(257))), 400, 40012)
    await expectError(await get(jwt('c'.repeat(11_000))), 400, 40012)
  })
  test('expired JWT is 40142; bad signature or missing claims are 40144', async () => {
    await expectError(
      await gw.request('/channels/j3/messages', {
        key: null,
        headers: bearer(
          makeJwt(KEY_NAME, SECRET, { iat: now() - 100, exp: now() - 10, 'x-ably-capability': '{"*":["*"]}' }),
        ),
      }),
      401,
      40142,
    )
    await expectError(
      await gw.request('/channels/j3/messages', {
        key: null,
        headers: bearer(
          makeJwt(KEY_NAME, 'wrong', { iat: now(), exp: now() + 60, 'x-ably-capability': '{"*":["*"]}' }),
        ),
      }),
      401,
      40144,
    )
    await expectError(
      await gw.request('/channels/j3/messages', {
        key: null,
        headers: bearer(makeJwt(KEY_NAME, SECRET, { exp: now() + 60, 'x-ably-capability': '{"*":["*"]}' })),
      }),
      401,
      40144,
    )
  })
})

test('Basic over plain HTTP can be refused with 40103 when configured', async () => {
  const strict = await createTestGateway({ basicAuthRequiresTls: true })
  try {
    await expectError(await strict.request('/channels/a/messages'), 401, 40103)
    expect(
      (
        await strict.request('/channels/a/messages', {
          headers: { 'x-forwarded-proto': 'https', authorization: basic(strict.key) },
        })
      ).status,
    ).toBe(200)
  } finally {
    await strict.close()
  }
})
