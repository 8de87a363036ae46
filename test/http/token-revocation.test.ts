/**
 * Token revocation over HTTP on both backends, with a settable clock: who may revoke, what a
 * request may say, how long revocable tokens live, when a revocation applies and how long it is
 * remembered (restarts included).
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { APP_ID, TestClock, addKey, createTestGateway, type TestGateway } from '../helpers/gateway'
import { expectError } from '../helpers/errors'
import { makeJwt } from '../helpers/tokens'

const REVOCABLE = { name: `${APP_ID}.revocable`, secret: 'revocable-secret' }
const REVOCABLE_KEY = `${REVOCABLE.name}:${REVOCABLE.secret}`
const PLAIN_KEY = `${APP_ID}.plain:plain-secret`
const HOUR = 3_600_000

const dataDir = mkdtempSync(join(tmpdir(), 'gw-revocation-'))
const clock = new TestClock()
let gw: TestGateway

async function open() {
  gw = await createTestGateway({ dataDir }, clock)
  await addKey(gw, 'revocable', { secret: REVOCABLE.secret, revocableTokens: true })
  await addKey(gw, 'plain', { secret: 'plain-secret' })
}
beforeAll(open)
afterAll(async () => {
  await gw.close()
  rmSync(dataDir, { recursive: true, force: true })
})

const revoke = (json: unknown, key: string | null = REVOCABLE_KEY, keyName = REVOCABLE.name) =>
  gw.request(`/keys/${keyName}/revokeTokens`, { method: 'POST', json, key })
const token = async (json: Record<string, unknown> = {}, key = REVOCABLE_KEY) => {
  const r = await gw.request(`/keys/${key.split(':')[0]}/requestToken`, { method: 'POST', json, key })
  expect(r.status).toBe(200)
  return (await r.json()) as { token: string; issued: number; expires: number }
}
const use = (t: string) =>
  gw.request('/channels/probe/messages', {
    key: null,
    headers: { authorization: `Bearer ${Buffer.from(t).toString('base64')}` },
  })

describe('who may revoke', () => {
  test('Basic auth with the key itself; a token of it is 40162, another key 40101, no credentials 40101', async () => {
    const t = await token()
    const byToken = await gw.request(`/keys/${REVOCABLE.name}/revokeTokens`, {
      method: 'POST',
      json: { targets: ['clientId:x'] },
      key: null,
      headers: { authorization: `Bearer ${Buffer.from(t.token).toString('base64')}` },
    })
    await expectError(byToken, 401, 40162)
    await expectError(await revoke({ targets: ['clientId:x'] }, gw.key), 401, 40101)
    await expectError(await revoke({ targets: ['clientId:x'] }, null), 401, 40101)
  })

  test('a key without revocableTokens: 400 / 40000, nothing stored', async () => {
    const r = await revoke({ targets: ['clientId:x'] }, PLAIN_KEY, `${APP_ID}.plain`)
    expect((await expectError(r, 400, 40000)).message).toContain('revocableTokens')
    expect(gw.backend.revocations.forKey(`${APP_ID}.plain`, clock.now())).toEqual([])
  })
})

describe('what a request may say', () => {
  const cases: Array<[string, unknown, number]> = [
    ['no body', undefined, 40001],
    ['no targets', {}, 40001],
    ['empty targets', { targets: [] }, 40001],
    ['a target that is not a string', { targets: [7] }, 40001],
    ['more than 100 targets', { targets: Array.from({ length: 101 }, (_, i) => `clientId:${i}`) }, 40001],
    ['issuedBefore in the future', { targets: ['clientId:x'], issuedBefore: Date.now() + 60_000 }, 40003],
    ['issuedBefore over an hour ago', { targets: ['clientId:x'], issuedBefore: Date.now() - HOUR - 60_000 }, 40003],
    ['issuedBefore not a number', { targets: ['clientId:x'], issuedBefore: 'yesterday' }, 40003],
    ['allowReauthMargin not a boolean', { targets: ['clientId:x'], allowReauthMargin: 'yes' }, 40001],
  ]
  for (const [what, json, code] of cases)
    test(`${what}: 400 / ${code}`, async () => {
      clock.t = Date.now()
      await expectError(await revoke(json), 400, code)
    })

  test('each target succeeds or fails alone: an unknown type or an empty value is a 400 in its result', async () => {
    const r = await revoke({ targets: ['clientId:someone', 'nonsense:1', 'clientId:', 'revocationKey:g', 'plain'] })
    expect(r.status).toBe(201)
    const body = (await r.json()) as any
    expect([body.successCount, body.failureCount]).toEqual([2, 3])
    expect(body.results.map((x: any) => x.error?.code ?? 'ok')).toEqual(['ok', 40000, 40000, 'ok', 40000])
    expect(body.results[1]).toMatchObject({ target: 'nonsense:1', error: { statusCode: 400 } })
  })
})

describe('revocable tokens', () => {
  test('live at most an hour: the default ttl is an hour, a longer one is 40003', async () => {
    const t = await token()
    expect(t.expires - t.issued).toBe(HOUR)
    const r = await gw.request(`/keys/${REVOCABLE.name}/requestToken`, {
      method: 'POST',
      json: { ttl: HOUR + 1 },
      key: REVOCABLE_KEY,
    })
    expect((await expectError(r, 400, 40003)).message).toContain('revocable')
    // a key without revocable tokens still issues a day
    expect((await token({ ttl: 24 * HOUR }, PLAIN_KEY)).expires).toBeGreaterThan(clock.now() + HOUR)
  })

  test('a JWT of a key with revocable tokens living over an hour is refused (40144)', async () => {
    const iat = Math.floor(clock.now() / 1000)
    const jwt = makeJwt(REVOCABLE.name, REVOCABLE.secret, {
      iat,
      exp: iat + 2 * 3600,
      'x-ably-capability': '{"*":["*"]}',
    })
    await expectError(await use(jwt), 401, 40144)
  })

  test('a revocationKey of a token request is matched by revocationKey targets', async () => {
    const grouped = await token({ revocationKey: 'group-7' })
    const other = await token({ revocationKey: 'group-8' })
    clock.advance(1)
    await revoke({ targets: ['revocationKey:group-7'] })
    await expectError(await use(grouped.token), 401, 40141)
    expect((await use(other.token)).status).toBe(200)
  })

  test('tokens issued at or after issuedBefore keep working', async () => {
    const before = await token({ clientId: 'late' })
    clock.advance(10)
    const at = clock.now()
    const after = await token({ clientId: 'late' })
    clock.advance(10)
    await revoke({ targets: ['clientId:late'], issuedBefore: at })
    await expectError(await use(before.token), 401, 40141)
    expect((await use(after.token)).status).toBe(200)
  })

  test('allowReauthMargin: the token works for 30 s more, then is refused', async () => {
    const t = await token({ clientId: 'margin' })
    expect((await use(t.token)).status).toBe(200)
    clock.advance(1)
    const r = await revoke({ targets: ['clientId:margin'], allowReauthMargin: true })
    const [result] = ((await r.json()) as any).results
    expect(result.appliesAt - result.issuedBefore).toBe(30_000)
    clock.advance(29_999)
    expect((await use(t.token)).status).toBe(200)
    clock.advance(1)
    await expectError(await use(t.token), 401, 40141)
  })

  test('an Ably token of a key that had no revocable tokens when it was issued cannot be revoked', async () => {
    const t = await token({ clientId: 'older' }, PLAIN_KEY)
    const key = (await gw.backend.control.getKey(`${APP_ID}.plain`))!
    await gw.backend.control.createKey({ ...key, revocableTokens: true })
    clock.advance(1)
    expect((await revoke({ targets: ['clientId:older'] }, PLAIN_KEY, `${APP_ID}.plain`)).status).toBe(201)
    expect((await use(t.token)).status).toBe(200)
    await gw.backend.control.createKey({ ...key, revocableTokens: false })
  })
})

describe('how long revocations are remembered', () => {
  test('across a restart', async () => {
    const t = await token({ clientId: 'restart' })
    clock.advance(1)
    await revoke({ targets: ['clientId:restart'] })
    await gw.close()
    await open()
    await expectError(await use(t.token), 401, 40141)
  })

  test('until an hour after issuedBefore: every token they refuse has expired by then', async () => {
    clock.advance(1)
    await revoke({ targets: ['clientId:forgotten'] })
    const keep = gw.backend.revocations.forKey(REVOCABLE.name, clock.now())
    expect(keep.some((r) => r.target === 'clientId:forgotten')).toBe(true)
    clock.advance(HOUR)
    const left = gw.backend.revocations.forKey(REVOCABLE.name, clock.now())
    expect(left.some((r) => r.target === 'clientId:forgotten')).toBe(false)
  })
})
