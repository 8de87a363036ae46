/**
 * Refused credentials sent again and again (ably-js renews and retries on a token error, and its
 * REST retry can resend the stale token without end): the verdict is remembered per credential,
 * so the node verifies each one once, for a bounded time and count; the answer stays the hosted
 * one. Verifications are counted by the key lookups they make.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { addApp, addKey, createTestGateway, ROOT_KEY, TestClock, type TestGateway } from '../helpers/gateway'
import { expectError } from '../helpers/errors'
import { makeJwt } from '../helpers/tokens'

const [KEY_NAME, SECRET] = ROOT_KEY.split(':') as [string, string]
const clock = new TestClock()
const TTL_MS = 60_000
let gw: TestGateway
let lookups = 0

beforeAll(async () => {
  gw = await createTestGateway({ refusedCredentialsCacheSize: 3, refusedCredentialsCacheMs: TTL_MS }, clock)
  const control = gw.backend.control
  // any control change forgets every verdict: on Redis the announcements of the bootstrap arrive
  // after it, so a change of an app of its own is made and its echo awaited (the announcements
  // come back in order): a write is applied where it was made, and on Redis again when it comes back
  let echoes = 0
  control.onChange((e) => e.kind === 'key' && e.appId === 'settle' && echoes++)
  await addApp(gw, 'settle')
  for (let i = 0; i < 500 && echoes < (gw.config.redisUrl ? 2 : 1); i++) await Bun.sleep(10)
  const getKey = control.getKey.bind(control)
  control.getKey = (name: string) => {
    lookups++
    return getKey(name)
  }
})
afterAll(() => gw.close())

const now = () => Math.floor(clock.now() / 1000)
const jwt = (claims: Record<string, unknown>, kid = KEY_NAME, secret = SECRET) =>
  makeJwt(kid, secret, { iat: now(), exp: now() + 600, ...claims })
const get = (token: string) =>
  gw.request('/channels/refused/messages', {
    key: null,
    headers: { authorization: `Bearer ${Buffer.from(token).toString('base64')}` },
  })

/** Key lookups (verifications) made while sending `token` `times` times, each refused as expected. */
async function lookupsFor(token: string, times: number, status: number, code: number) {
  const before = lookups
  for (let i = 0; i < times; i++) await expectError(await get(token), status, code)
  return lookups - before
}

describe('a refused token sent 50 times is verified once', () => {
  test.each([
    ['expired', () => jwt({ iat: now() - 100, exp: now() - 10 }), 401, 40142],
    ['bad signature', () => jwt({}, KEY_NAME, 'wrong'), 401, 40144],
    ['unknown key', () => jwt({}, 'testapp.nokey', 'x'), 401, 40400],
    ['forged service token', () => `testapp.rootkey.${Buffer.from('{}').toString('base64url')}.bad`, 401, 40101],
  ])('%s', async (_why, token, status, code) => {
    expect(await lookupsFor(token(), 50, status, code)).toBe(1)
  })
})

test('a token that expires while cached is refused from then on without verifying it again', async () => {
  const token = jwt({ exp: now() + 10 })
  expect((await get(token)).status).toBe(200)
  clock.advance(11_000)
  expect(await lookupsFor(token, 20, 401, 40142)).toBe(0)
})

test('a verdict is forgotten after REFUSED_CREDENTIALS_CACHE_MS, and past REFUSED_CREDENTIALS_CACHE_SIZE the oldest first', async () => {
  const a = jwt({}, KEY_NAME, 'wrong-a')
  expect(await lookupsFor(a, 2, 401, 40144)).toBe(1)
  clock.advance(TTL_MS + 1)
  expect(await lookupsFor(a, 2, 401, 40144)).toBe(1)
  // three more fill the cache of 3: `a` is forgotten, the last three are remembered
  for (const s of ['b', 'c', 'd']) expect(await lookupsFor(jwt({}, KEY_NAME, `wrong-${s}`), 2, 401, 40144)).toBe(1)
  expect(await lookupsFor(a, 1, 401, 40144)).toBe(1)
})

test('a key created after its name was refused: its credentials are accepted at once', async () => {
  const id = `late-${Date.now()}`
  const key = `testapp.${id}:late-secret`
  const r = () => gw.request('/channels/refused/messages', { key })
  await expectError(await r(), 401, 40400)
  await expectError(await r(), 401, 40400)
  await addKey(gw, id, { secret: 'late-secret' })
  expect((await r()).status).toBe(200)
})
