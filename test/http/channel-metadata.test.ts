import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { APP_ID, createTestGateway, type TestGateway } from '../helpers/gateway'
import { onRedis } from '../helpers/redis-cluster'
import { expectError } from '../helpers/errors'

let gw: TestGateway
beforeAll(async () => {
  gw = await createTestGateway()
  await gw.backend.control.createKey({
    appId: APP_ID,
    id: 'meta',
    name: 'meta',
    secret: 'meta-secret',
    capability: { 'x:*': ['publish', 'subscribe', 'presence'] },
    status: 0,
    revocableTokens: false,
    created: 0,
    modified: 0,
  })
})
afterAll(async () => {
  await gw.close()
})
const LIMITED = 'testapp.meta:meta-secret'

const json = async (r: Response) => {
  expect(r.headers.get('content-type')).toBe('application/json')
  return (await r.json()) as any
}
const member = (clientId: string, action: number, i: number) => ({
  id: `conn1:${i}:0`,
  action,
  clientId,
  connectionId: 'conn1',
  timestamp: Date.now() + i,
  data: `d-${clientId}`,
})

describe('presence', () => {
  test('empty channel: 200 []', async () => {
    expect(await json(await gw.request('/channels/nobody/presence'))).toEqual([])
  })
  test('members are listed with action 1 (present) and can be filtered', async () => {
    await gw.backend.presence.apply(
      APP_ID,
      'room',
      [member('ann', 2, 0), member('ben', 2, 1), member('cat', 2, 2), member('ben', 3, 3)],
      { persisted: false },
    )
    const all = await json(await gw.request('/channels/room/presence'))
    expect(all.map((m: any) => m.clientId).sort()).toEqual(['ann', 'cat'])
    expect(all[0]).toMatchObject({ action: 1, connectionId: 'conn1' })
    const ann = await json(await gw.request('/channels/room/presence?clientId=ann'))
    expect(ann).toHaveLength(1)
    expect(ann[0].data).toBe('d-ann')
    expect(await json(await gw.request('/channels/room/presence?limit=1'))).toHaveLength(1)
    await expectError(await gw.request('/channels/room/presence?limit=5000'), 400, 40003)
  })
  test('presence history pages with ./history links', async () => {
    const first = await gw.request('/channels/room/presence/history?limit=3')
    const items = await json(first)
    expect(items.map((m: any) => m.action)).toEqual([3, 2, 2])
    const next = /<\.\/history\?([^>]*)>; rel="next"/.exec(first.headers.get('link')!)
    expect(next).not.toBeNull()
    const rest = await json(await gw.request(`/channels/room/presence/history?${next![1]}`))
    expect(rest.map((m: any) => m.clientId)).toEqual(['ann'])
  })
  test('presence needs subscribe; history needs history', async () => {
    await expectError(await gw.request('/channels/room/presence', { key: LIMITED }), 403, 40160)
    await expectError(await gw.request('/channels/x:a/presence/history', { key: LIMITED }), 403, 40160)
    expect((await gw.request('/channels/x:a/presence', { key: LIMITED })).status).toBe(200)
  })
  test('batch presence returns a BatchResult with per-channel failures', async () => {
    const r = await json(await gw.request('/presence?channels=x:a,room', { key: LIMITED }))
    expect(r.successCount).toBe(1)
    expect(r.failureCount).toBe(1)
    expect(r.results[0]).toEqual({ channel: 'x:a', presence: [] })
    expect(r.results[1].error.code).toBe(40160)
    // 401 inside a batch entry, as the hosted service has it (a whole request refused stays 403)
    expect(r.results[1].error.statusCode).toBe(401)
    const sep = await json(await gw.request('/presence?channels=room|nobody&separator=|'))
    expect(sep.results.map((x: any) => x.presence.length)).toEqual([2, 0])
    await expectError(await gw.request('/presence'), 400, 40003)
  })
})

describe('channel details and enumeration', () => {
  beforeAll(async () => {
    for (const c of ['enum:a', 'enum:b', 'enum:c', 'other']) {
      await gw.request(`/channels/${c}/messages`, { method: 'POST', json: { data: 'x' } })
    }
  })
  test('GET /channels/{ch} returns channelId, name and occupancy metrics', async () => {
    const d = await json(await gw.request('/channels/room'))
    expect(d).toMatchObject({ channelId: 'room', name: 'room', status: { isActive: true } })
    expect(d.status.occupancy.metrics).toMatchObject({
      connections: 0,
      subscribers: 0,
      presenceMembers: 2,
      publishers: 0,
    })
  })
  test('envelope=json wraps the response', async () => {
    const d = await json(await gw.request('/channels/room?envelope=json'))
    expect(d.statusCode).toBe(200)
    expect(d.response.channelId).toBe('room')
    const e = await gw.request('/channels/room?envelope=json', { key: LIMITED })
    expect(e.status).toBe(200)
    const body = (await e.json()) as any
    expect(body.statusCode).toBe(403)
    expect(body.response.error.code).toBe(40160)
  })
  test('GET /channels lists active channels by prefix with paging', async () => {
    expect(await json(await gw.request('/channels?prefix=enum:'))).toEqual(['enum:a', 'enum:b', 'enum:c'])
    const p1 = await gw.request('/channels?prefix=enum:&limit=2')
    expect(await json(p1)).toEqual(['enum:a', 'enum:b'])
    const next = /<\.\/channels\?([^>]*)>; rel="next"/.exec(p1.headers.get('link')!)![1]
    const p2 = await gw.request(`/channels?${next}`)
    expect(await json(p2)).toEqual(['enum:c'])
    expect(p2.headers.get('link')).not.toContain('rel="next"')
    const byValue = await json(await gw.request('/channels?prefix=other&by=value'))
    expect(byValue[0].channelId).toBe('other')
  })
  test('enumeration needs channel-metadata', async () => {
    await expectError(await gw.request('/channels', { key: LIMITED }), 403, 40160)
    await expectError(await gw.request('/channels?by=color'), 400, 40003)
  })
})

describe('batch publish', () => {
  test('publishes to every channel and reports per-channel results', async () => {
    const r = await gw.request('/messages', {
      method: 'POST',
      key: LIMITED,
      json: [
        {
          channels: ['x:b1', 'x:b2'],
          messages: [
            { name: 'a', data: '1' },
            { name: 'b', data: '2' },
          ],
        },
        { channels: 'forbidden', messages: { data: 'x' } },
      ],
    })
    expect(r.status).toBe(201)
    const body = await json(r)
    expect(body).toHaveLength(2)
    expect(body[0]).toMatchObject({ successCount: 2, failureCount: 0 })
    expect(body[0].results[0]).toMatchObject({ channel: 'x:b1' })
    expect(body[0].results[0].serials).toHaveLength(2)
    expect(body[1]).toMatchObject({ successCount: 0, failureCount: 1 })
    // 401 inside a batch entry, as the hosted service has it (a whole request refused stays 403)
    expect(body[1].results[0].error).toMatchObject({ code: 40160, statusCode: 401 })
    const hist = await json(await gw.request('/channels/x:b2/messages?direction=forwards'))
    expect(hist.map((m: any) => m.name)).toEqual(['a', 'b'])
    expect(await json(await gw.request('/channels/forbidden/messages'))).toEqual([])
  })
  test('malformed batch specs are 400', async () => {
    await expectError(
      await gw.request('/messages', { method: 'POST', json: { channels: [], messages: [{ data: 'x' }] } }),
      400,
      40001,
    )
    await expectError(
      await gw.request('/messages', { method: 'POST', json: { messages: [{ data: 'x' }] } }),
      400,
      40001,
    )
    await expectError(await gw.request('/messages', { method: 'POST', json: [] }), 400, 40001)
    const tooMany = Array.from({ length: 101 }, (_, i) => `c${i}`)
    await expectError(
      await gw.request('/messages', { method: 'POST', json: { channels: tooMany, messages: { data: 'x' } } }),
      400,
      40001,
    )
  })
})

describe('stats and time', () => {
  test('GET /time returns [ms]', async () => {
    const t = await json(await gw.request('/time', { key: null }))
    expect(t).toHaveLength(1)
    expect(Math.abs(t[0] - Date.now())).toBeLessThan(60_000)
  })
  test('GET /stats counts published messages in the flattened entries form', async () => {
    const before = await json(await gw.request('/stats?unit=hour&limit=1'))
    const count0 = before[0]?.entries['messages.inbound.rest.messages.count'] ?? 0
    await gw.request('/channels/stats-ch/messages', { method: 'POST', json: [{ data: 'abc' }, { data: 'de' }] })
    for (const unit of ['minute', 'hour', 'day', 'month']) {
      const rows = await json(await gw.request(`/stats?unit=${unit}`))
      expect(rows[0]).toMatchObject({ unit, appId: APP_ID, schema: expect.stringContaining('app-stats') })
      expect(typeof rows[0].intervalId).toBe('string')
    }
    const after = await json(await gw.request('/stats?unit=hour&limit=1'))
    expect(after[0].entries['messages.inbound.rest.messages.count']).toBe(count0 + 2)
    expect(after[0].intervalId).toMatch(/^\d{4}-\d{2}-\d{2}:\d{2}$/)
    expect(Object.values(after[0].entries).every((v) => v !== 0)).toBe(true)
  })
  test('bad stats params are 400', async () => {
    await expectError(await gw.request('/stats?unit=week'), 400, 40003)
    await expectError(await gw.request('/stats?limit=0'), 400, 40003)
  })
})

describe('health', () => {
  test('/health and /ready answer without credentials', async () => {
    expect((await gw.request('/health', { key: null })).status).toBe(200)
    const r = await gw.request('/ready', { key: null })
    expect(r.status).toBe(200)
    expect(((await r.json()) as any).backend).toBe(onRedis() ? 'redis' : 'memory')
  })
})
