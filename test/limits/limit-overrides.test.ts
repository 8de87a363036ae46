import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { MAX_LIMIT_OVERRIDE } from '../../src/core/control/management'
import { expectError } from '../helpers/errors'
import { ACCESS_TOKEN, APP_ID, createTestGateway, type TestGateway } from '../helpers/gateway'

/** Rate-limit overrides are the operator's: a tenant's own token cannot raise its limits (both backends). */
let gw: TestGateway
let operatorAccount: string
let tenant: { id: string; token: string }
beforeAll(async () => {
  gw = await createTestGateway()
  operatorAccount = (await gw.backend.control.getApp(APP_ID))!.accountId
  const r = await call(ACCESS_TOKEN, '/accounts', 'POST', { name: 'tenant' })
  const body = (await r.json()) as any
  tenant = { id: body.account.id, token: body.accessToken }
})
afterAll(async () => {
  await gw.close()
})

function call(token: string, path: string, method = 'GET', json?: unknown) {
  return gw.request(`/v1${path}`, { method, json, key: null, headers: { authorization: `Bearer ${token}` } })
}

describe('rate-limit overrides', () => {
  test("a tenant's own token reads its limits but cannot change them", async () => {
    expect((await call(tenant.token, `/accounts/${tenant.id}/limits`)).status).toBe(200)
    for (const value of [1e21, 5000, null])
      await expectError(
        await call(tenant.token, `/accounts/${tenant.id}/limits`, 'PATCH', { messages: value }),
        403,
        40160,
      )
    // nor see or change another account's
    await expectError(await call(tenant.token, `/accounts/${operatorAccount}/limits`), 404, 40400)
    const limits = (await (await call(tenant.token, `/accounts/${tenant.id}/limits`)).json()) as any
    expect(limits.messages).toMatchObject({ override: null, effective: 2000 })
  })

  test("the operator sets any account's limits, within bounds", async () => {
    const patch = (json: unknown) => call(ACCESS_TOKEN, `/accounts/${tenant.id}/limits`, 'PATCH', json)
    const r = await patch({ messages: 5000, management: 600 })
    expect(r.status).toBe(200)
    expect(((await r.json()) as any).messages).toMatchObject({ override: 5000, effective: 5000 })
    const seen = (await (await call(tenant.token, `/accounts/${tenant.id}/limits`)).json()) as any
    expect(seen.messages.effective).toBe(5000)
    expect(seen.management.effective).toBe(600)
    for (const bad of [1e21, MAX_LIMIT_OVERRIDE + 1, 0, -5, '100'])
      expect((await patch({ messages: bad })).status).toBe(400)
    const e = await expectError(await patch({ messages: 1e21 }), 400, 40000)
    expect(e.message).toContain(`up to ${MAX_LIMIT_OVERRIDE}`)
    expect((await patch({ messages: MAX_LIMIT_OVERRIDE })).status).toBe(200)
    expect((await patch({ messages: null, management: null })).status).toBe(200)
    // an unknown account is 404
    await expectError(await call(ACCESS_TOKEN, '/accounts/nobody/limits', 'PATCH', { messages: 10 }), 404, 40400)
  })
})
