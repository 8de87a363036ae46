import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { ACCESS_TOKEN, APP_ID, basic, createTestGateway, type TestGateway } from '../helpers/gateway'
import { sha256Hex } from '../../src/lib/crypto'
import { expectError } from '../helpers/errors'

let gw: TestGateway
let accountId: string
beforeAll(async () => {
  gw = await createTestGateway()
  accountId = (await gw.backend.control.getApp(APP_ID))!.accountId
})
afterAll(async () => {
  await gw.close()
})

const v1 = (path: string, init: { method?: string; json?: unknown; token?: string | null } = {}) => {
  const headers: Record<string, string> = {}
  const token = init.token === undefined ? ACCESS_TOKEN : init.token
  if (token) headers.authorization = `Bearer ${token}`
  return gw.request(`/v1${path}`, { method: init.method ?? 'GET', json: init.json, key: null, headers })
}
const body = async (r: Response) => (await r.json()) as any

describe('access tokens', () => {
  test('GET /me shows the token, user and account', async () => {
    const me = await body(await v1('/me'))
    expect(me.account.id).toBe(accountId)
    expect(me.token.capabilities).toContain('write:key')
    expect(me.token).toHaveProperty('expires_at')
    expect(typeof me.user.email).toBe('string')
  })
  test('missing or wrong tokens are 401', async () => {
    await expectError(await v1('/me', { token: null }), 401, 40101)
    await expectError(await v1('/me', { token: 'nope' }), 401, 40101)
  })
  test('a token lacking a capability is 403; another account is not found', async () => {
    await gw.backend.control.createAccessToken({
      id: 'ro',
      accountId,
      name: 'read-only',
      hash: sha256Hex('read-only-token'),
      capabilities: ['read:app'],
      created: 0,
    })
    expect((await v1(`/accounts/${accountId}/apps`, { token: 'read-only-token' })).status).toBe(200)
    await expectError(
      await v1(`/accounts/${accountId}/apps`, { method: 'POST', json: { name: 'x' }, token: 'read-only-token' }),
      403,
      40160,
    )
    await expectError(await v1(`/apps/${APP_ID}/keys`, { token: 'read-only-token' }), 403, 40160)
    await expectError(await v1('/accounts/someone-else/apps'), 404, 40400)
  })
})

describe('apps', () => {
  test('create, list, update, delete', async () => {
    const created = await v1(`/accounts/${accountId}/apps`, {
      method: 'POST',
      json: { name: 'shop', status: 'enabled', tlsOnly: false },
    })
    expect(created.status).toBe(201)
    const app = await body(created)
    expect(app).toMatchObject({ accountId, name: 'shop', status: 'enabled', tlsOnly: false })
    expect((await body(await v1(`/accounts/${accountId}/apps`))).map((a: any) => a.id)).toContain(app.id)
    const patched = await body(await v1(`/apps/${app.id}`, { method: 'PATCH', json: { name: 'shop2' } }))
    expect(patched).toMatchObject({ id: app.id, name: 'shop2' })
    expect((await v1(`/apps/${app.id}`, { method: 'DELETE' })).status).toBe(204)
    expect((await body(await v1(`/accounts/${accountId}/apps`))).map((a: any) => a.id)).not.toContain(app.id)
    await expectError(await v1(`/apps/${app.id}`, { method: 'DELETE' }), 404, 40400)
  })
  test('bad app input is 400', async () => {
    await expectError(await v1(`/accounts/${accountId}/apps`, { method: 'POST', json: {} }), 400, 40000)
    await expectError(
      await v1(`/accounts/${accountId}/apps`, { method: 'POST', json: { name: 'x', status: 'sleeping' } }),
      400,
      40000,
    )
    await expectError(
      await v1(`/accounts/${accountId}/apps`, { method: 'POST', json: { name: 'x', tlsOnly: 'yes' } }),
      400,
      40001,
    )
  })
  test('a disabled app refuses its keys; a tlsOnly app refuses plain HTTP', async () => {
    const app = await body(await v1(`/accounts/${accountId}/apps`, { method: 'POST', json: { name: 'gated' } }))
    const key = (
      await body(await v1(`/apps/${app.id}/keys`, { method: 'POST', json: { name: 'k', capability: { '*': ['*'] } } }))
    ).key
    expect((await gw.request('/channels/x/messages', { key })).status).toBe(200)
    await v1(`/apps/${app.id}`, { method: 'PATCH', json: { tlsOnly: true } })
    await expectError(await gw.request('/channels/x/messages', { key }), 403, 40311)
    expect(
      (
        await gw.request('/channels/x/messages', {
          key,
          headers: { 'x-forwarded-proto': 'https', authorization: basic(key) },
        })
      ).status,
    ).toBe(200)
    await v1(`/apps/${app.id}`, { method: 'PATCH', json: { tlsOnly: false, status: 'disabled' } })
    await expectError(await gw.request('/channels/x/messages', { key }), 403, 40300)
  })
})

describe('keys', () => {
  test('a created key publishes at once; the full key string is shown only on creation; a revoked key and its tokens stop working', async () => {
    const r = await v1(`/apps/${APP_ID}/keys`, {
      method: 'POST',
      json: { name: 'publisher', capability: { 'news:*': ['publish', 'subscribe', 'history'] } },
    })
    expect(r.status).toBe(201)
    const k = await body(r)
    expect(k.key).toMatch(new RegExp(`^${APP_ID}\\.${k.id}:.+`))
    expect(k.capability).toEqual({ 'news:*': ['publish', 'subscribe', 'history'] })
    const listed = (await body(await v1(`/apps/${APP_ID}/keys`))).find((x: any) => x.id === k.id)
    expect(listed.key).not.toContain(':')
    expect(
      (await gw.request('/channels/news:a/messages', { method: 'POST', json: { data: 'x' }, key: k.key })).status,
    ).toBe(201)
    await expectError(
      await gw.request('/channels/other/messages', { method: 'POST', json: { data: 'x' }, key: k.key }),
      403,
      40160,
    )
    const token = (
      await body(await gw.request(`/keys/${APP_ID}.${k.id}/requestToken`, { method: 'POST', json: {}, key: k.key }))
    ).token
    expect(
      (await gw.request('/channels/news:a/messages', { key: null, headers: { authorization: `Bearer ${token}` } }))
        .status,
    ).toBe(200)

    const upd = await body(
      await v1(`/apps/${APP_ID}/keys/${k.id}`, {
        method: 'PATCH',
        json: { name: 'renamed', capability: { other: ['publish'] } },
      }),
    )
    expect(upd).toMatchObject({ name: 'renamed', capability: { other: ['publish'] } })
    expect(
      (await gw.request('/channels/other/messages', { method: 'POST', json: { data: 'x' }, key: k.key })).status,
    ).toBe(201)

    expect((await v1(`/apps/${APP_ID}/keys/${k.id}/revoke`, { method: 'POST' })).status).toBe(200)
    await expectError(
      await gw.request('/channels/other/messages', { method: 'POST', json: { data: 'x' }, key: k.key }),
      401,
      40131,
    )
    await expectError(
      await gw.request('/channels/news:a/messages', { key: null, headers: { authorization: `Bearer ${token}` } }),
      401,
      40131,
    )
    expect((await body(await v1(`/apps/${APP_ID}/keys`))).find((x: any) => x.id === k.id).status).toBe(1)
  })
  test('invalid capabilities and unknown keys', async () => {
    await expectError(
      await v1(`/apps/${APP_ID}/keys`, { method: 'POST', json: { name: 'x', capability: { a: ['fly'] } } }),
      400,
      40000,
    )
    await expectError(await v1(`/apps/${APP_ID}/keys`, { method: 'POST', json: { name: 'x' } }), 400, 40000)
    await expectError(await v1(`/apps/${APP_ID}/keys/nokey`, { method: 'PATCH', json: { name: 'y' } }), 404, 40400)
    await expectError(await v1(`/apps/noapp/keys`), 404, 40400)
  })
})

describe('namespaces', () => {
  test('create, list, update, delete; duplicates are 409', async () => {
    const r = await v1(`/apps/${APP_ID}/namespaces`, { method: 'POST', json: { id: 'archive', persisted: true } })
    expect(r.status).toBe(201)
    expect(await body(r)).toMatchObject({
      id: 'archive',
      appId: APP_ID,
      persisted: true,
      pushEnabled: false,
      batchingInterval: 20,
    })
    await expectError(await v1(`/apps/${APP_ID}/namespaces`, { method: 'POST', json: { id: 'archive' } }), 409, 40900)
    expect((await body(await v1(`/apps/${APP_ID}/namespaces`))).map((n: any) => n.id)).toContain('archive')
    // persisted: true takes effect on publishing at once
    expect(await gw.core.namespaces.isPersisted(APP_ID, 'archive:x')).toBe(true)
    const upd = await body(
      await v1(`/apps/${APP_ID}/namespaces/archive`, { method: 'PATCH', json: { pushEnabled: true } }),
    )
    expect(upd).toMatchObject({ persisted: true, pushEnabled: true })
    expect((await v1(`/apps/${APP_ID}/namespaces/archive`, { method: 'DELETE' })).status).toBe(204)
    expect(await gw.core.namespaces.isPersisted(APP_ID, 'archive:x')).toBe(false)
    await expectError(await v1(`/apps/${APP_ID}/namespaces/archive`, { method: 'DELETE' }), 404, 40400)
    await expectError(await v1(`/apps/${APP_ID}/namespaces`, { method: 'POST', json: { id: 'bad:id' } }), 400, 40000)
  })
})

describe('stats', () => {
  test('app and account stats count real traffic', async () => {
    await gw.request('/channels/st/messages', { method: 'POST', json: [{ data: 'a' }, { data: 'b' }] })
    const app = await body(await v1(`/apps/${APP_ID}/stats?unit=hour&limit=1`))
    expect(app[0].unit).toBe('hour')
    expect(app[0].entries['messages.inbound.rest.messages.count']).toBeGreaterThanOrEqual(2)
    const acct = await body(await v1(`/accounts/${accountId}/stats?unit=minute`))
    expect(acct[0].entries['messages.all.messages.count']).toBeGreaterThanOrEqual(2)
    await expectError(await v1(`/apps/${APP_ID}/stats?unit=year`), 400, 40003)
  })
})

describe('accounts (operator)', () => {
  test('the bootstrap token creates accounts whose own tokens see only themselves', async () => {
    const r = await v1('/accounts', { method: 'POST', json: { name: 'tenant-a', id: 'tenant-a' } })
    expect(r.status).toBe(201)
    const { account, accessToken } = await body(r)
    expect(account).toMatchObject({ id: 'tenant-a', name: 'tenant-a' })
    expect((await body(await v1('/accounts'))).map((a: any) => a.id)).toContain('tenant-a')
    await expectError(await v1('/accounts', { method: 'POST', json: { name: 'dup', id: 'tenant-a' } }), 409, 40900)
    await expectError(await v1('/accounts', { method: 'POST', json: {} }), 400, 40001)

    // the tenant's token provisions its own app and key, which work at once
    const me = await body(await v1('/me', { token: accessToken }))
    expect(me.account.id).toBe('tenant-a')
    expect(me.token.capabilities).not.toContain('write:account')
    const app = await body(
      await v1('/accounts/tenant-a/apps', { method: 'POST', json: { name: 'tenant app' }, token: accessToken }),
    )
    const key = (
      await body(
        await v1(`/apps/${app.id}/keys`, {
          method: 'POST',
          json: { name: 'k', capability: { '*': ['*'] } },
          token: accessToken,
        }),
      )
    ).key
    expect((await gw.request('/channels/t/messages', { method: 'POST', json: { data: 'x' }, key })).status).toBe(201)
    // tenants do not see each other, nor may they list or create accounts
    await expectError(await v1(`/accounts/${accountId}/apps`, { token: accessToken }), 404, 40400)
    await expectError(await v1(`/apps/${app.id}/keys`), 404, 40400)
    await expectError(await v1('/accounts', { token: accessToken }), 403, 40160)
    await expectError(await v1('/accounts', { method: 'POST', json: { name: 'x' }, token: accessToken }), 403, 40160)
  })
})
