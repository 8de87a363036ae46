import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { APP_ID, createTestGateway } from './helpers/gateway'

const dir = mkdtempSync(join(tmpdir(), 'gw-persist-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('a restart keeps keys, apps and persisted-channel history', async () => {
  const first = await createTestGateway({ dataDir: dir })
  await first.core.backend.control.putNamespace({ appId: APP_ID, id: 'keep', persisted: true, pushEnabled: false, mutableMessages: false })
  await first.core.backend.control.createKey({
    appId: APP_ID, id: 'extra', name: 'extra', secret: 'extra-secret', capability: { 'keep:*': ['*'] }, status: 0, revocableTokens: false, created: 0, modified: 0,
  })
  const serials: string[] = []
  for (let i = 0; i < 5; i++) {
    const r = await first.request('/channels/keep:log/messages', { method: 'POST', json: { name: `m${i}`, data: { i } }, key: 'testapp.extra:extra-secret' })
    expect(r.status).toBe(201)
    serials.push(((await r.json()) as any).serials[0])
  }
  await first.request('/channels/volatile/messages', { method: 'POST', json: { data: 'gone' } })
  await first.close()

  const second = await createTestGateway({ dataDir: dir })
  try {
    const r = await second.request('/channels/keep:log/messages?direction=forwards', { key: 'testapp.extra:extra-secret' })
    expect(r.status).toBe(200)
    const items = (await r.json()) as any[]
    expect(items.map((m) => m.name)).toEqual(['m0', 'm1', 'm2', 'm3', 'm4'])
    expect(items.map((m) => m.serial)).toEqual(serials)
    expect(items[2]).toMatchObject({ data: '{"i":2}', encoding: 'json' })
    // short-lived history survives a graceful restart within its window (embedded: the ring snapshot)
    const volatile = (await (await second.request('/channels/volatile/messages')).json()) as unknown[]
    expect(volatile).toHaveLength(1)
    // serials keep increasing across the restart
    const next = ((await (await second.request('/channels/keep:log/messages', { method: 'POST', json: { data: 'after' } })).json()) as any).serials[0]
    expect(next > serials[4]!).toBe(true)
    expect(await second.core.backend.control.listAccounts()).toHaveLength(1)
  } finally {
    await second.close()
  }
})
