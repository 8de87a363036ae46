import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/config'
import { expectError } from '../helpers/errors'
import { ROOT_KEY, basic, createTestGateway, listen, type TestGateway } from '../helpers/gateway'

/**
 * CORS_ORIGINS: which browser origins may read answers, and when credentials are allowed (only to
 * requests carrying their own Authorization header, as ably-js sends them).
 */
const APP = 'https://app.example'
const OTHER = 'https://evil.example'

const preflight = (gw: TestGateway, origin: string, headers = 'authorization,content-type') =>
  gw.request('/channels/c/messages', {
    method: 'OPTIONS',
    key: null,
    headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': headers },
  })

describe('default (any origin)', () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await createTestGateway()
  })
  afterAll(async () => {
    await gw.close()
  })

  test('credentials are allowed only to requests that carry an Authorization header', async () => {
    const withKey = await gw.request('/channels/c/messages', { headers: { origin: OTHER } })
    expect(withKey.headers.get('access-control-allow-origin')).toBe(OTHER)
    expect(withKey.headers.get('access-control-allow-credentials')).toBe('true')
    const keyInQuery = await gw.request(`/channels/c/messages?key=${encodeURIComponent(ROOT_KEY)}`, {
      key: null,
      headers: { origin: OTHER },
    })
    expect(keyInQuery.status).toBe(200)
    expect(keyInQuery.headers.get('access-control-allow-origin')).toBe(OTHER)
    expect(keyInQuery.headers.get('access-control-allow-credentials')).toBeNull()
  })
  test('a preflight gets the credentials flag only when it announces an Authorization header', async () => {
    const auth = await preflight(gw, OTHER)
    expect(auth.status).toBe(204)
    expect(auth.headers.get('access-control-allow-credentials')).toBe('true')
    const plain = await preflight(gw, OTHER, 'content-type')
    expect(plain.headers.get('access-control-allow-origin')).toBe(OTHER)
    expect(plain.headers.get('access-control-allow-credentials')).toBeNull()
  })
})

describe('an allow-list', () => {
  let gw: TestGateway
  let base: string
  beforeAll(async () => {
    gw = await createTestGateway({ corsOrigins: [APP, 'http://localhost:3000'] })
    base = listen(gw)
  })
  afterAll(async () => {
    await gw.close()
  })

  test('a listed origin is answered with CORS headers, any other without', async () => {
    const ok = await gw.request('/channels/c/messages', { headers: { origin: APP } })
    expect(ok.headers.get('access-control-allow-origin')).toBe(APP)
    expect(ok.headers.get('access-control-allow-credentials')).toBe('true')
    const other = await gw.request('/channels/c/messages', { headers: { origin: OTHER } })
    expect(other.status).toBe(200)
    expect(other.headers.get('access-control-allow-origin')).toBeNull()
    expect(other.headers.get('access-control-allow-credentials')).toBeNull()
    const err = await gw.request('/channels/c/messages', { key: null, headers: { origin: OTHER } })
    expect(err.headers.get('access-control-allow-origin')).toBeNull()
  })
  test('a preflight from another origin is 403 / 40300 in the error shape', async () => {
    expect((await preflight(gw, APP)).status).toBe(204)
    const r = await preflight(gw, OTHER)
    expect(r.headers.get('access-control-allow-origin')).toBeNull()
    await expectError(r, 403, 40300)
  })
  test('the native publish route and the event stream follow the list too', async () => {
    const cases: Array<[string, string | null]> = [
      [APP, APP],
      [OTHER, null],
    ]
    for (const [origin, allowed] of cases) {
      const pub = await fetch(`${base}/channels/c/messages`, {
        method: 'POST',
        headers: { origin, authorization: basic(ROOT_KEY), 'content-type': 'application/json' },
        body: '{"data":"x"}',
      })
      expect(pub.status).toBe(201)
      expect(pub.headers.get('access-control-allow-origin')).toBe(allowed)
      const ctrl = new AbortController()
      const sse = await fetch(`${base}/sse?v=1.2&channels=c&key=${encodeURIComponent(ROOT_KEY)}`, {
        headers: { origin },
        signal: ctrl.signal,
      })
      expect(sse.status).toBe(200)
      expect(sse.headers.get('access-control-allow-origin')).toBe(allowed)
      ctrl.abort()
    }
  })
})

test('CORS_ORIGINS=none answers no origin with CORS headers', async () => {
  const gw = await createTestGateway({ corsOrigins: [] })
  try {
    const r = await gw.request('/channels/c/messages', { headers: { origin: APP } })
    expect(r.headers.get('access-control-allow-origin')).toBeNull()
  } finally {
    await gw.close()
  }
})

test('CORS_ORIGINS is *, none or a list of origins', () => {
  expect(loadConfig({}).corsOrigins).toEqual(['*'])
  expect(loadConfig({ CORS_ORIGINS: 'none' }).corsOrigins).toEqual([])
  expect(loadConfig({ CORS_ORIGINS: `${APP}, http://localhost:3000` }).corsOrigins).toEqual([
    APP,
    'http://localhost:3000',
  ])
  for (const bad of ['app.example', `${APP}/`, `${APP}/path`, `${APP},*x`])
    expect(() => loadConfig({ CORS_ORIGINS: bad })).toThrow('CORS_ORIGINS')
})
