import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { intervalId, intervalStart } from '../../src/core/stats/intervals'

let gw: TestGateway
beforeAll(async () => {
  gw = await createTestGateway({ sandboxProvisioning: true })
})
afterAll(async () => {
  await gw.close()
})

const json = async (r: Response) => (await r.json()) as any

describe('sandbox provisioning', () => {
  test('POST /apps creates an app with the requested keys, namespaces and present members', async () => {
    const r = await gw.request('/apps', {
      method: 'POST',
      key: null,
      json: {
        keys: [{}, { capability: JSON.stringify({ channel0: ['publish'] }) }],
        namespaces: [
          { id: 'persisted', persisted: true },
          { id: 'pushenabled', pushEnabled: true },
        ],
        channels: [
          {
            name: 'persisted:presence_fixtures',
            presence: [
              { clientId: 'client_bool', data: 'true' },
              { clientId: 'client_json', data: '{"test":"This is a JSONObject clientData payload"}', encoding: 'json' },
            ],
          },
        ],
      },
    })
    expect(r.status).toBe(201)
    const app = await json(r)
    expect(app.keys).toHaveLength(2)
    expect(app.namespaces).toHaveLength(2)
    expect(app.keys[0]).toMatchObject({
      capability: '{"*":["*"]}',
      keyStr: `${app.keys[0].keyName}:${app.keys[0].keySecret}`,
    })
    expect(app.keys[1].capability).toBe('{"channel0":["publish"]}')
    const root = app.keys[0].keyStr
    expect(
      (await gw.request('/channels/anything/messages', { method: 'POST', json: { data: 'x' }, key: root })).status,
    ).toBe(201)
    expect(
      (await gw.request('/channels/other/messages', { method: 'POST', json: { data: 'x' }, key: app.keys[1].keyStr }))
        .status,
    ).toBe(403)
    const members = await json(await gw.request('/channels/persisted:presence_fixtures/presence', { key: root }))
    expect(members).toHaveLength(2)
    const jsonMember = members.find((m: any) => m.clientId === 'client_json')
    expect(jsonMember).toMatchObject({
      data: '{"test":"This is a JSONObject clientData payload"}',
      encoding: 'json',
      action: 1,
    })
    expect(await gw.core.namespaces.isPersisted(app.appId, 'persisted:x')).toBe(true)

    // POST /stats loads legacy records, read back flattened (an hour three hours ago)
    const hourStart = intervalStart('hour', Date.now() - 3 * 3_600_000)
    const [m5, m6] = [hourStart + 5 * 60_000, hourStart + 6 * 60_000].map((t) => intervalId('minute', t))
    const loaded = await gw.request('/stats', {
      method: 'POST',
      key: root,
      json: [
        {
          intervalId: m5,
          inbound: { realtime: { messages: { count: 50, data: 5000 } } },
          tokenRequests: { succeeded: 7 },
        },
        { intervalId: m6, inbound: { realtime: { messages: { count: 60, data: 6000 } } } },
      ],
    })
    expect(loaded.status).toBe(201)
    const hourId = intervalId('hour', hourStart)
    const hour = await json(
      await gw.request(`/stats?start=${hourId}&end=${hourStart + 3_599_999}&by=hour&direction=forwards`, { key: root }),
    )
    expect(hour[0].intervalId).toBe(hourId)
    expect(hour[0].entries['messages.inbound.realtime.messages.count']).toBe(110)
    expect(hour[0].entries['apiRequests.tokenRequests.succeeded']).toBe(7)
    const minutes = await json(
      await gw.request(`/stats?start=${hourStart}&end=${hourStart + 3_599_999}&unit=minute&direction=forwards`, {
        key: root,
      }),
    )
    expect(minutes.map((m: any) => m.entries['messages.inbound.realtime.messages.data'])).toEqual([5000, 6000])

    // DELETE /apps/{id} needs one of that app's keys
    expect((await gw.request(`/apps/${app.appId}`, { method: 'DELETE' })).status).toBe(401)
    expect((await gw.request(`/apps/${app.appId}`, { method: 'DELETE', key: root })).status).toBe(204)
    expect((await gw.request('/channels/anything/messages', { key: root })).status).toBe(401)
  })

  test('bad sandbox bodies are 400', async () => {
    expect(
      (await gw.request('/apps', { method: 'POST', key: null, json: { keys: [{ capability: '{"a":["fly"]}' }] } }))
        .status,
    ).toBe(400)
    expect((await gw.request('/apps', { method: 'POST', key: null, json: { keys: 'nope' } })).status).toBe(400)
  })

  test('disabled by default', async () => {
    const plain = await createTestGateway()
    try {
      expect((await plain.request('/apps', { method: 'POST', key: null, json: {} })).status).toBe(404)
    } finally {
      await plain.close()
    }
  })
})
