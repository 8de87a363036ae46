/**
 * Streams of revoked tokens, at the core's streams service (which every transport uses): a
 * revocation ends the matching streams when it applies (at once, or after the reauth margin) and
 * leaves the others alone. Both backends; the event-stream framing of the same thing is tested
 * over real HTTP in test/compat/token-revocation.test.ts.
 */
import { afterAll, beforeAll, expect, jest, test } from 'bun:test'
import type { Principal } from '../../src/core/auth/principal'
import type { SessionSink } from '../../src/core/fanout/session'
import type { GatewayError } from '../../src/errors'
import { APP_ID, TestClock, addKey, createTestGateway, type TestGateway } from '../helpers/gateway'

const KEY_NAME = `${APP_ID}.revocable`
const KEY = `${KEY_NAME}:revocable-secret`

const clock = new TestClock()
let gw: TestGateway
let owner: Principal
beforeAll(async () => {
  gw = await createTestGateway({}, clock)
  await addKey(gw, 'revocable', { revocableTokens: true })
  owner = await gw.core.auth.authenticate({
    authorization: `Basic ${Buffer.from(KEY).toString('base64')}`,
    secure: () => false,
  })
})
afterAll(async () => {
  await gw.close()
})

/** A stream opened with a fresh token for `clientId`; `ended` collects how the server ended it. */
async function streamOf(clientId: string) {
  const { token } = await gw.core.tokens.request(KEY_NAME, { clientId }, async () => owner)
  const principal = await gw.core.auth.authenticate({
    authorization: `Bearer ${Buffer.from(token).toString('base64')}`,
    secure: () => false,
  })
  const ended: GatewayError[] = []
  const sink: SessionSink = { deliver: () => true, notice() {}, begin() {}, end: (e) => ended.push(e), close() {} }
  const session = gw.core.streams.create({ principal, channels: [`stream-of-${clientId}`] }, sink)
  await gw.core.streams.start(session)
  return { ended, session }
}

/** Lets the revalidation (a few awaited lookups) run. */
const settle = async () => {
  for (let i = 0; i < 50; i++) await Promise.resolve()
}

test('a revocation ends the streams of the tokens it matches at once, and no others', async () => {
  const revoked = await streamOf('gone')
  const kept = await streamOf('stays')
  clock.advance(1)
  await gw.core.revocations.revoke(owner, KEY_NAME, { targets: ['clientId:gone'] })
  await settle()
  expect(revoked.ended.map((e) => [e.code, e.statusCode])).toEqual([[40141, 401]])
  expect(kept.ended).toEqual([])
  kept.session.close()
})

test('with allowReauthMargin the stream lives until the revocation applies, 30 s later', async () => {
  const s = await streamOf('margin')
  jest.useFakeTimers()
  try {
    clock.advance(1)
    await gw.core.revocations.revoke(owner, KEY_NAME, { targets: ['clientId:margin'], allowReauthMargin: true })
    await settle()
    expect(s.ended).toEqual([])
    clock.advance(29_999)
    jest.advanceTimersByTime(29_999)
    await settle()
    expect(s.ended).toEqual([])
    clock.advance(1)
    jest.advanceTimersByTime(1)
    await settle()
    expect(s.ended.map((e) => e.code)).toEqual([40141])
  } finally {
    jest.useRealTimers()
  }
})
