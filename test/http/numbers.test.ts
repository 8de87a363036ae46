import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createHmac, randomBytes } from 'node:crypto'
import { pack } from 'msgpackr'
import { expectError } from '../helpers/errors'
import { APP_ID, addKey, createTestGateway, type TestGateway } from '../helpers/gateway'

/**
 * Numbers are taken as sent or refused (issue 26, finding 10): a JSON number that a 64-bit float
 * cannot hold (it would be stored as null or 0), a msgpack float that JSON cannot hold, and a
 * token parameter in another notation than plain decimal digits (`Number("0x10")` is 16) are a
 * 400 in the spec's shape, and nothing is stored or issued. On both backends.
 */
let gw: TestGateway
const KEY_NAME = `${APP_ID}.rootkey`
const SECRET = 's3cr3t-root-secret'
const REVOCABLE = `${APP_ID}.revocable:revocable-secret`
beforeAll(async () => {
  gw = await createTestGateway()
  await addKey(gw, 'revocable', { secret: 'revocable-secret', revocableTokens: true })
})
afterAll(async () => {
  await gw.close()
})

const publishText = (channel: string, text: string) =>
  gw.request(`/channels/${channel}/messages`, {
    method: 'POST',
    body: text,
    headers: { 'content-type': 'application/json' },
  })
const history = async (channel: string) => (await (await gw.request(`/channels/${channel}/messages`)).json()) as any[]

describe('JSON numbers out of range', () => {
  test.each([
    ['1e400 (Infinity)', '{"data":{"n":1e400}}'],
    ['-1E+309', '{"data":{"n":-1E+309}}'],
    ['1e-400 (0)', '{"data":{"n":1e-400}}'],
    ['400 digits', `{"data":{"n":${'9'.repeat(400)}}}`],
    ['in extras', '{"data":"x","extras":{"headers":{"n":1e999}}}'],
    ['in a batch', '[{"data":1},{"data":2e308}]'],
  ])('%s: 400 / 40001 and nothing stored', async (what, text) => {
    const channel = `num-${what.replace(/\W/g, '')}`
    const e = await expectError(await publishText(channel, text), 400, 40001)
    expect(e.message).toContain('out of range')
    expect(await history(channel)).toEqual([])
  })
  test('numbers a float holds, and the same text inside strings, are stored as sent', async () => {
    expect((await publishText('num-ok', '{"data":{"a":1e308,"b":-5e-324,"c":0e-999,"d":"1e400"}}')).status).toBe(201)
    const [m] = await history('num-ok')
    expect(m.encoding).toBe('json') // an object's data travels as JSON text
    expect(JSON.parse(m.data)).toEqual({ a: 1e308, b: -5e-324, c: 0, d: '1e400' })
  })
  test('the management interface refuses them too (an override of 1e400 is not stored as null)', async () => {
    const accountId = (await gw.backend.control.getApp(APP_ID))!.accountId
    const r = await gw.request(`/v1/accounts/${accountId}/limits`, {
      method: 'PATCH',
      body: '{"messages":1e400}',
      key: null,
      headers: { 'content-type': 'application/json', authorization: 'Bearer test-management-access-token' },
    })
    await expectError(r, 400, 40001)
  })
})

describe('msgpack floats JSON cannot hold', () => {
  test.each([
    ['Infinity', Infinity],
    ['-Infinity', -Infinity],
    ['NaN', NaN],
  ])('%s: 400 / 40001 and nothing stored', async (what, n) => {
    const channel = `mp-${what.replace(/\W/g, '')}`
    const r = await gw.request(`/channels/${channel}/messages`, {
      method: 'POST',
      body: new Uint8Array(pack({ data: { n } })),
      headers: { 'content-type': 'application/x-msgpack' },
    })
    await expectError(r, 400, 40001)
    expect(await history(channel)).toEqual([])
  })
})

describe('token parameters: plain decimal digits', () => {
  const requestToken = (json: unknown, key: string | null = gw.key) =>
    gw.request(`/keys/${KEY_NAME}/requestToken`, { method: 'POST', json, key })

  test.each(['0x10', '0b1000', '0o20', '1e4', ' 5000', '5000 ', '+5000', '5_000', '5000.0', 'Infinity', '1e21'])(
    'ttl %p is 400 / 40003, no token',
    async (ttl) => {
      const e = await expectError(await requestToken({ ttl }), 400, 40003)
      expect(e.message).toContain('ttl')
    },
  )
  test.each([1e21, 16.5, 2 ** 53])('ttl %p as a JSON number is 400 / 40003', async (ttl) => {
    await expectError(await requestToken({ ttl }), 400, 40003)
  })
  test('ttl as digits or a JSON integer is taken as sent', async () => {
    for (const ttl of ['16000', 16000]) {
      const d = (await (await requestToken({ ttl })).json()) as any
      expect(d.expires - d.issued).toBe(16000)
    }
  })

  /** A signed TokenRequest whose timestamp is the string `timestamp` (the mac covers it as sent). */
  const signed = (timestamp: string) => {
    const nonce = randomBytes(12).toString('hex')
    const text = [KEY_NAME, '', '', '', timestamp, nonce].join('\n') + '\n'
    const mac = createHmac('sha256', SECRET).update(text).digest('base64')
    return { keyName: KEY_NAME, timestamp, nonce, mac }
  }
  test('a signed request with a timestamp in another notation is 400 / 40003', async () => {
    const now = Date.now()
    for (const timestamp of [`0x${now.toString(16)}`, `${now / 1000}e3`, ` ${now}`, `${now}.0`])
      expect((await expectError(await requestToken(signed(timestamp), null), 400, 40003)).message).toContain(
        'timestamp',
      )
    expect((await requestToken(signed(String(now)), null)).status).toBe(200)
  })

  test('issuedBefore of a revocation in another notation is 400 / 40003', async () => {
    const revoke = (issuedBefore: unknown) =>
      gw.request(`/keys/${APP_ID}.revocable/revokeTokens`, {
        method: 'POST',
        json: { targets: ['clientId:x'], issuedBefore },
        key: REVOCABLE,
      })
    const now = Date.now() - 1000
    for (const issuedBefore of [`0x${now.toString(16)}`, `${now}.0`, ` ${now}`])
      await expectError(await revoke(issuedBefore), 400, 40003)
    expect((await revoke(String(now))).status).toBe(201)
  })

  test('a JWT whose exp is out of range (1e400, Infinity when parsed) is refused, not eternal', async () => {
    const b64 = (s: string) => Buffer.from(s).toString('base64url')
    const iat = Math.floor(Date.now() / 1000)
    const head = b64(JSON.stringify({ typ: 'JWT', alg: 'HS256', kid: KEY_NAME }))
    const claims = b64(`{"iat":${iat},"exp":1e400,"x-ably-capability":"{\\"*\\":[\\"*\\"]}"}`)
    const sig = createHmac('sha256', SECRET).update(`${head}.${claims}`).digest('base64url')
    const r = await gw.request('/channels/jwt-num/messages', {
      key: null,
      headers: { authorization: `Bearer ${head}.${claims}.${sig}` },
    })
    await expectError(r, 401, 40144)
  })
})

describe('integer query parameters: plain decimal digits', () => {
  test.each(['0x10', '1e1', '+5', '5.0', ' 5'])('history limit=%p is 400 / 40003', async (limit) => {
    await expectError(await gw.request(`/channels/num-q/messages?limit=${encodeURIComponent(limit)}`), 400, 40003)
  })
  test('limit=16 is taken as sent', async () => {
    expect((await gw.request('/channels/num-q/messages?limit=16')).status).toBe(200)
  })
})
