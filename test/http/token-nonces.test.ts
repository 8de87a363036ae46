/**
 * Signed token requests cannot be replayed by crowding their nonces out (issue 26, finding 5):
 * nonces have a store of their own, a live one is never forgotten, and an account that fills its
 * share (TOKEN_NONCES_PER_ACCOUNT) gets 429 for new signed requests instead. Runs on either
 * backend (TEST_BACKEND).
 */
import { describe, expect, test } from 'bun:test'
import { useGateway } from '../helpers/gateway'
import { expectError } from '../helpers/errors'
import { rawConnected } from '../helpers/realtime-raw'
import { signedTokenRequest } from '../helpers/tokens'

const KEY_NAME = 'testapp.rootkey'
const SECRET = 's3cr3t-root-secret'
const CAP = 5

const ctx = useGateway({ tokenNoncesPerAccount: CAP, connectionMarksPerApp: 3 })

const requestToken = (json: unknown) =>
  ctx.gw.request(`/keys/${KEY_NAME}/requestToken`, { method: 'POST', json, key: null })

/** Opens a realtime connection and closes it with CLOSE (the server records it as ended). */
async function connectAndClose(): Promise<void> {
  const { raw } = await rawConnected(ctx.base, { key: ctx.gw.key })
  raw.send({ action: 7 })
  await raw.next((f) => f.action === 8)
  await raw.closing()
}

describe('token-request nonces', () => {
  test('a used TokenRequest is never issued a token again, however many connections close and nonces pile up', async () => {
    const used = signedTokenRequest(KEY_NAME, SECRET)
    expect((await requestToken(used)).status).toBe(200)
    // ended-connection records, well past their own bound, never take a nonce's room
    for (let i = 0; i < 8; i++) await connectAndClose()
    await expectError(await requestToken(used), 401, 40105)

    // the account's share of live nonces fills: new signed requests are refused, none is forgotten
    for (let i = 1; i < CAP; i++) expect((await requestToken(signedTokenRequest(KEY_NAME, SECRET))).status).toBe(200)
    const refused = await requestToken(signedTokenRequest(KEY_NAME, SECRET))
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0)
    const err = await expectError(refused, 429, 42910)
    expect(err.message).toContain('replay window')
    for (let i = 0; i < 3; i++) await expectError(await requestToken(signedTokenRequest(KEY_NAME, SECRET)), 429, 42910)
    await expectError(await requestToken(used), 401, 40105)
  })

  test('unsigned token requests (Basic auth) need no nonce and are not refused by a full share', async () => {
    const r = await ctx.gw.request(`/keys/${KEY_NAME}/requestToken`, { method: 'POST', json: {} })
    expect(r.status).toBe(200)
  })
})
