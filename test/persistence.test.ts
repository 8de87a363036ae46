import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ACCESS_TOKEN, APP_ID, createTestGateway } from './helpers/gateway'

const dir = mkdtempSync(join(tmpdir(), 'gw-persist-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('a restart keeps keys, apps and persisted-channel history', async () => {
  const first = await createTestGateway({ dataDir: dir })
  await first.backend.control.putNamespace({
    appId: APP_ID,
    id: 'keep',
    persisted: true,
    pushEnabled: false,
    mutableMessages: false,
  })
  await first.backend.control.createKey({
    appId: APP_ID,
    id: 'extra',
    name: 'extra',
    secret: 'extra-secret',
    capability: { 'keep:*': ['*'] },
    status: 0,
    revocableTokens: false,
    created: 0,
    modified: 0,
  })
  const serials: string[] = []
  for (let i = 0; i < 5; i++) {
    const r = await first.request('/channels/keep:log/messages', {
      method: 'POST',
      json: { name: `m${i}`, data: { i } },
      key: 'testapp.extra:extra-secret',
    })
    expect(r.status).toBe(201)
    serials.push(((await r.json()) as any).serials[0])
  }
  await first.request('/channels/volatile/messages', { method: 'POST', json: { data: 'gone' } })
  await first.close()

  const second = await createTestGateway({ dataDir: dir })
  try {
    const r = await second.request('/channels/keep:log/messages?direction=forwards', {
      key: 'testapp.extra:extra-secret',
    })
    expect(r.status).toBe(200)
    const items = (await r.json()) as any[]
    expect(items.map((m) => m.name)).toEqual(['m0', 'm1', 'm2', 'm3', 'm4'])
    expect(items.map((m) => m.serial)).toEqual(serials)
    expect(items[2]).toMatchObject({ data: '{"i":2}', encoding: 'json' })
    // short-lived history survives a graceful restart within its window (embedded: the ring snapshot)
    const volatile = (await (await second.request('/channels/volatile/messages')).json()) as unknown[]
    expect(volatile).toHaveLength(1)
    // serials keep increasing across the restart
    const next = (
      (await (
        await second.request('/channels/keep:log/messages', { method: 'POST', json: { data: 'after' } })
      ).json()) as any
    ).serials[0]
    expect(next > serials[4]!).toBe(true)
    expect(await second.backend.control.listAccounts()).toHaveLength(1)
  } finally {
    await second.close()
  }
})

test('management records survive a restart: apps, keys, namespaces, rules, queues, limits', async () => {
  const dir2 = mkdtempSync(join(tmpdir(), 'gw-persist-mgmt-'))
  const auth = { authorization: `Bearer ${ACCESS_TOKEN}` }
  const v1 = (gw: Awaited<ReturnType<typeof createTestGateway>>, path: string, method = 'GET', json?: unknown) =>
    gw.request(`/v1${path}`, { method, json, key: null, headers: auth })
  try {
    const first = await createTestGateway({ dataDir: dir2 })
    const accountId = (await first.backend.control.getApp(APP_ID))!.accountId
    const app = (await (await v1(first, `/accounts/${accountId}/apps`, 'POST', { name: 'kept' })).json()) as any
    const key = (await (
      await v1(first, `/apps/${app.id}/keys`, 'POST', { name: 'k', capability: { '*': ['publish'] } })
    ).json()) as any
    await v1(first, `/apps/${app.id}/namespaces`, 'POST', { id: 'ns', persisted: true })
    const queue = (await (
      await v1(first, `/apps/${app.id}/queues`, 'POST', { name: 'q', ttl: 5, maxLength: 10 })
    ).json()) as any
    await v1(first, `/apps/${app.id}/rules`, 'POST', {
      ruleType: 'amqp',
      source: { channelFilter: '.*' },
      target: { queueId: queue.id },
    })
    await v1(first, `/accounts/${accountId}/limits`, 'PATCH', { history: 7 })
    await first.close()

    const second = await createTestGateway({ dataDir: dir2 })
    try {
      expect(((await (await v1(second, `/accounts/${accountId}/apps`)).json()) as any[]).map((a) => a.name)).toContain(
        'kept',
      )
      expect(
        (await second.request('/channels/x/messages', { method: 'POST', json: { data: 'k' }, key: key.key })).status,
      ).toBe(201)
      expect(((await (await v1(second, `/apps/${app.id}/namespaces`)).json()) as any[])[0]).toMatchObject({
        id: 'ns',
        persisted: true,
      })
      expect(((await (await v1(second, `/apps/${app.id}/queues`)).json()) as any[])[0]).toMatchObject({
        name: 'q',
        ttl: 5,
        maxLength: 10,
      })
      expect(((await (await v1(second, `/apps/${app.id}/rules`)).json()) as any[])[0]).toMatchObject({
        ruleType: 'amqp',
        target: { queueId: queue.id },
      })
      expect(((await (await v1(second, `/accounts/${accountId}/limits`)).json()) as any).history.override).toBe(7)
    } finally {
      await second.close()
    }
  } finally {
    rmSync(dir2, { recursive: true, force: true })
  }
})

test('queued messages survive a restart until acknowledged, with their delivery counts', async () => {
  const dir3 = mkdtempSync(join(tmpdir(), 'gw-persist-queue-'))
  const now = Date.now()
  try {
    const first = await createTestGateway({ dataDir: dir3 })
    await first.backend.queues.push(
      'testapp:q',
      [
        { channel: 'c', message: { data: 'a' } },
        { channel: 'c', message: { data: 'b', extras: { n: [1] } } },
      ],
      10,
      now,
    )
    const [a] = await first.backend.queues.receive('testapp:q', 1, 60_000, 600_000, now)
    expect(a!.message).toEqual({ data: 'a' })
    await first.close()

    const second = await createTestGateway({ dataDir: dir3 })
    try {
      expect(await second.backend.queues.counts('testapp:q', 600_000, now)).toEqual({
        ready: 1,
        unacknowledged: 1,
        total: 2,
      })
      const later = await second.backend.queues.receive('testapp:q', 10, 1000, 600_000, now + 61_000)
      expect(later.map((m) => [m.message.data, m.redelivered]).sort()).toEqual([
        ['a', 1],
        ['b', 0],
      ])
      expect(later.find((m) => m.message.data === 'b')!.message).toEqual({ data: 'b', extras: { n: [1] } })
      expect(
        await second.backend.queues.ack(
          'testapp:q',
          later.map((m) => m.deliveryTag),
        ),
      ).toBe(2)
      expect(await second.backend.queues.counts('testapp:q', 600_000, now + 61_000)).toEqual({
        ready: 0,
        unacknowledged: 0,
        total: 0,
      })
    } finally {
      await second.close()
    }
  } finally {
    rmSync(dir3, { recursive: true, force: true })
  }
})

test('a client-supplied id published before and after a graceful restart is stored once, persisted or not', async () => {
  const dir4 = mkdtempSync(join(tmpdir(), 'gw-persist-ids-'))
  const publish = (gw: Awaited<ReturnType<typeof createTestGateway>>, channel: string, data: string) =>
    gw.request(`/channels/${channel}/messages`, { method: 'POST', json: { id: 'pay-7:0', name: 'n', data } })
  try {
    const first = await createTestGateway({ dataDir: dir4 })
    await first.backend.control.putNamespace({
      appId: APP_ID,
      id: 'keep',
      persisted: true,
      pushEnabled: false,
      mutableMessages: false,
    })
    const serials: Record<string, string> = {}
    for (const channel of ['keep:ids', 'volatile-ids']) {
      const r = await publish(first, channel, 'before')
      expect(r.status).toBe(201)
      serials[channel] = ((await r.json()) as any).serials[0]
    }
    await first.close()
    const second = await createTestGateway({ dataDir: dir4 })
    try {
      for (const channel of ['keep:ids', 'volatile-ids']) {
        const r = await publish(second, channel, 'after')
        expect(r.status).toBe(201)
        expect(((await r.json()) as any).serials).toEqual([serials[channel]])
        const items = (await (await second.request(`/channels/${channel}/messages`)).json()) as any[]
        expect(items.map((m) => [m.id, m.data])).toEqual([['pay-7:0', 'before']])
      }
    } finally {
      await second.close()
    }
  } finally {
    rmSync(dir4, { recursive: true, force: true })
  }
})
