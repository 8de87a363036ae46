import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { MAX_RESOURCE_LENGTH } from '../../src/core/auth/capability'
import { MAX_QUEUE_LENGTH, MAX_QUEUE_TTL_MINUTES } from '../../src/core/control/integrations'
import {
  MAX_CONFLATION_KEY_LENGTH,
  MAX_NAME_LENGTH,
  MAX_NAMESPACE_INTERVAL_MS,
  MIN_LIMIT_OVERRIDE,
} from '../../src/core/control/management'
import { expectError } from '../helpers/errors'
import { ACCESS_TOKEN, APP_ID, createTestGateway, type TestGateway } from '../helpers/gateway'

/**
 * Every value the management interface stores is bounded (issue 26, finding 8): names, capability
 * resources, queue ttl and length, namespace intervals, rate-limit overrides. A value out of
 * bounds is a 400 in the spec's shape (40000 from the service, 40001 from the route's schema)
 * and nothing of it is stored. On both backends.
 */
let gw: TestGateway
let accountId: string
beforeAll(async () => {
  gw = await createTestGateway()
  accountId = (await gw.backend.control.getApp(APP_ID))!.accountId
})
afterAll(async () => {
  await gw.close()
})

const MB = 1024 * 1024
const long = (n: number) => 'n'.repeat(n)
const v1 = (path: string, method = 'GET', json?: unknown) =>
  gw.request(`/v1${path}`, { method, json, key: null, headers: { authorization: `Bearer ${ACCESS_TOKEN}` } })
const body = async (r: Response) => (await r.json()) as any
/** A 400 in the spec's shape, from the schema (40001) or the service (40000). */
async function expect400(r: Response) {
  const code = Number(r.headers.get('x-ably-errorcode'))
  expect([40000, 40001]).toContain(code)
  return expectError(r, 400, code)
}

describe('names', () => {
  test('an account, app or key name over MAX_NAME_LENGTH characters is 400 and stores nothing', async () => {
    for (const n of [MAX_NAME_LENGTH + 1, MB]) {
      await expect400(await v1('/accounts', 'POST', { name: long(n) }))
      await expect400(await v1(`/accounts/${accountId}/apps`, 'POST', { name: long(n) }))
      await expect400(await v1(`/apps/${APP_ID}/keys`, 'POST', { name: long(n), capability: { '*': ['*'] } }))
      await expect400(await v1(`/apps/${APP_ID}`, 'PATCH', { name: long(n) }))
    }
    const accounts = await body(await v1('/accounts'))
    expect(accounts.every((a: any) => a.name.length <= MAX_NAME_LENGTH)).toBe(true)
    const apps = await body(await v1(`/accounts/${accountId}/apps`))
    expect(apps.every((a: any) => a.name.length <= MAX_NAME_LENGTH)).toBe(true)
    const keys = await body(await v1(`/apps/${APP_ID}/keys`))
    expect(keys.every((k: any) => k.name.length <= MAX_NAME_LENGTH)).toBe(true)
  })
  test('a name of MAX_NAME_LENGTH characters is accepted', async () => {
    const r = await v1(`/accounts/${accountId}/apps`, 'POST', { name: long(MAX_NAME_LENGTH) })
    expect(r.status).toBe(201)
    expect((await body(r)).name).toHaveLength(MAX_NAME_LENGTH)
  })
})

describe('capability resources', () => {
  test('a 1.5 MB resource is 400 / 40000 on create and update; the key keeps its capability', async () => {
    const huge = { [long(1.5 * MB)]: ['publish'] }
    const e = await expectError(await v1(`/apps/${APP_ID}/keys`, 'POST', { name: 'k', capability: huge }), 400, 40000)
    expect(e.message).toContain(`longer than ${MAX_RESOURCE_LENGTH}`)
    const key = await body(await v1(`/apps/${APP_ID}/keys`, 'POST', { name: 'k', capability: { a: ['publish'] } }))
    await expectError(await v1(`/apps/${APP_ID}/keys/${key.id}`, 'PATCH', { capability: huge }), 400, 40000)
    const stored = (await body(await v1(`/apps/${APP_ID}/keys`))).find((k: any) => k.id === key.id)
    expect(stored.capability).toEqual({ a: ['publish'] })
  })
})

describe('queues', () => {
  const queue = (json: Record<string, unknown>) => v1(`/apps/${APP_ID}/queues`, 'POST', { name: 'bounded', ...json })
  test('ttl and maxLength are integers within their bounds; out of them is 400 and no queue is made', async () => {
    for (const bad of [
      { ttl: 60, maxLength: 1e308 },
      { ttl: 1e21, maxLength: 10 },
      { ttl: 60, maxLength: MAX_QUEUE_LENGTH + 1 },
      { ttl: MAX_QUEUE_TTL_MINUTES + 1, maxLength: 10 },
      { ttl: 1.5, maxLength: 10 },
      { ttl: 60, maxLength: 0 },
      { ttl: 60, maxLength: 10, region: long(MB) },
      { ttl: 60, maxLength: 10, region: 'no spaces' },
    ])
      await expect400(await queue(bad))
    expect((await body(await v1(`/apps/${APP_ID}/queues`))).filter((q: any) => q.name === 'bounded')).toEqual([])
    const r = await queue({ ttl: MAX_QUEUE_TTL_MINUTES, maxLength: MAX_QUEUE_LENGTH, region: 'eu-west-1-a' })
    expect(r.status).toBe(201)
    expect(await body(r)).toMatchObject({ ttl: MAX_QUEUE_TTL_MINUTES, maxLength: MAX_QUEUE_LENGTH })
  })
})

describe('namespaces', () => {
  test('batchingInterval and conflationInterval are integers up to MAX_NAMESPACE_INTERVAL_MS; conflationKey is bounded', async () => {
    const ns = (json: Record<string, unknown>) => v1(`/apps/${APP_ID}/namespaces`, 'POST', { id: 'bounded', ...json })
    for (const bad of [
      { batchingInterval: 1e308 },
      { batchingInterval: MAX_NAMESPACE_INTERVAL_MS + 1 },
      { conflationInterval: 1e21 },
      { conflationInterval: -1 },
      { conflationKey: long(MB) },
      { conflationKey: long(MAX_CONFLATION_KEY_LENGTH + 1) },
    ])
      await expect400(await ns(bad))
    expect((await body(await v1(`/apps/${APP_ID}/namespaces`))).some((n: any) => n.id === 'bounded')).toBe(false)
    const r = await ns({ batchingInterval: MAX_NAMESPACE_INTERVAL_MS, conflationKey: 'k' })
    expect(r.status).toBe(201)
    await expect400(await v1(`/apps/${APP_ID}/namespaces/bounded`, 'PATCH', { batchingInterval: 1e308 }))
    const stored = (await body(await v1(`/apps/${APP_ID}/namespaces`))).find((n: any) => n.id === 'bounded')
    expect(stored.batchingInterval).toBe(MAX_NAMESPACE_INTERVAL_MS)
  })
})

describe('rate-limit overrides', () => {
  test('an override below MIN_LIMIT_OVERRIDE is 400 / 40000 and the account keeps its limits', async () => {
    const patch = (json: unknown) => v1(`/accounts/${accountId}/limits`, 'PATCH', json)
    for (const bad of [1e-7, MIN_LIMIT_OVERRIDE / 2, 0])
      expect((await expectError(await patch({ messages: bad }), 400, 40000)).message).toContain(
        String(MIN_LIMIT_OVERRIDE),
      )
    const limits = await body(await v1(`/accounts/${accountId}/limits`))
    expect(limits.messages.override).toBeNull()
    const r = await patch({ tokenRequests: MIN_LIMIT_OVERRIDE })
    expect(r.status).toBe(200)
    expect((await body(r)).tokenRequests.effective).toBe(MIN_LIMIT_OVERRIDE)
    expect((await patch({ tokenRequests: null })).status).toBe(200)
  })
})
