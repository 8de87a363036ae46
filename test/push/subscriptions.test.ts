/** Channel subscriptions and push channels over HTTP (both backends). */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { APP_ID, type TestGateway } from '../helpers/gateway'
import {
  allPages,
  as,
  device,
  deviceToken,
  expectError,
  fresh,
  json,
  pushGateway,
  register,
  type PushGateway,
} from './push-fixture'

let pg: PushGateway
let gw: TestGateway
beforeAll(async () => {
  pg = await pushGateway()
  gw = pg.gw
})
afterAll(async () => {
  await gw.close()
})

const SUBS = '/push/channelSubscriptions'
const subscribe = (body: unknown, init: { key?: string | null; headers?: Record<string, string> } = {}) =>
  gw.request(SUBS, { method: 'POST', json: body, ...init })
const list = async (qs: string, init: { key?: string | null; headers?: Record<string, string> } = {}) =>
  json(await gw.request(`${SUBS}?${qs}`, init))

describe('subscribing', () => {
  test('a device and a clientId subscribe; the answer is the subscription', async () => {
    const ch = `pushenabled:${fresh('news')}`
    const id = fresh('dev')
    await register(gw, device(id))
    expect(await json(await subscribe({ channel: ch, deviceId: id }), 201)).toEqual({ channel: ch, deviceId: id })
    expect(await json(await subscribe({ channel: ch, clientId: 'ann', deviceId: null }), 201)).toEqual({
      channel: ch,
      clientId: 'ann',
    })
    // subscribing again changes nothing
    await json(await subscribe({ channel: ch, clientId: 'ann' }), 201)
    expect(await list(`channel=${encodeURIComponent(ch)}`)).toEqual([
      { channel: ch, clientId: 'ann' },
      { channel: ch, deviceId: id },
    ])
  })

  test('only channels of a push-enabled namespace accept subscriptions', async () => {
    await expectError(await subscribe({ channel: 'plain:x', clientId: 'ann' }), 400, 40000)
    await expectError(await subscribe({ channel: 'no-namespace', clientId: 'ann' }), 400, 40000)
    const r = await subscribe({ channel: 'plain:x', clientId: 'ann' })
    expect((await r.json()).error.message).toContain('pushEnabled')
    // enabling the namespace opens it
    await gw.backend.control.putNamespace({
      appId: APP_ID,
      id: 'plain',
      persisted: false,
      pushEnabled: true,
      mutableMessages: false,
    })
    await json(await subscribe({ channel: 'plain:x', clientId: 'ann' }), 201)
    await gw.backend.control.putNamespace({
      appId: APP_ID,
      id: 'plain',
      persisted: false,
      pushEnabled: false,
      mutableMessages: false,
    })
    await gw.request(`${SUBS}?channel=plain:x`, { method: 'DELETE' })
  })

  test('bad bodies are 400, an unknown device is 404', async () => {
    await expectError(await subscribe({ channel: 'pushenabled:x', clientId: 'a', deviceId: 'b' }), 400, 40001)
    await expectError(await subscribe({ channel: 'pushenabled:x' }), 400, 40001)
    await expectError(await subscribe({ clientId: 'a' }), 400, 40001)
    await expectError(await subscribe({ channel: 7, clientId: 'a' }), 400, 40001)
    await expectError(await subscribe({ channel: '', clientId: 'a' }), 400, 40010)
    await expectError(await subscribe({ channel: 'pushenabled:x', deviceId: fresh('ghost') }), 404, 40400)
  })
})

describe('listing', () => {
  test('filters by channel, deviceId and clientId; concatFilters ORs deviceId and clientId', async () => {
    const tag = fresh('f')
    const [c1, c2] = [`pushenabled:${tag}-1`, `pushenabled:${tag}-2`]
    const id = `${tag}-dev`
    await register(gw, device(id, { clientId: `${tag}-cl` }))
    for (const ch of [c1, c2]) await json(await subscribe({ channel: ch, deviceId: id }), 201)
    await json(await subscribe({ channel: c1, clientId: `${tag}-cl` }), 201)
    expect(await list(`deviceId=${id}`)).toEqual([
      { channel: c1, deviceId: id },
      { channel: c2, deviceId: id },
    ])
    expect(await list(`clientId=${tag}-cl`)).toEqual([{ channel: c1, clientId: `${tag}-cl` }])
    expect(await list(`channel=${c2}&deviceId=${id}`)).toEqual([{ channel: c2, deviceId: id }])
    expect(await list(`channel=${c1}&deviceId=${id}&clientId=${tag}-cl&concatFilters=true`)).toEqual([
      { channel: c1, clientId: `${tag}-cl` },
      { channel: c1, deviceId: id },
    ])
    await expectError(await gw.request(`${SUBS}?deviceId=${id}&clientId=${tag}-cl`), 400, 40003)
  })

  test('pages follow Link headers, in channel then subscriber order', async () => {
    const ch = `pushenabled:${fresh('paged')}`
    const clients = Array.from({ length: 7 }, (_, i) => `pc${i}`)
    for (const c of clients) await json(await subscribe({ channel: ch, clientId: c }), 201)
    const { items, pages } = await allPages(gw, `${SUBS}?channel=${encodeURIComponent(ch)}&limit=3`)
    expect(pages).toBe(3)
    expect(items.map((s) => s.clientId)).toEqual(clients)
    await expectError(await gw.request(`${SUBS}?cursor=not-a-cursor`), 400, 40003)
  })

  test('GET /push/channels lists each channel with subscriptions once, paginated', async () => {
    const tag = fresh('chans')
    const chans = [`pushenabled:${tag}-a`, `pushenabled:${tag}-b`, `pushenabled:${tag}-c`]
    for (const ch of chans) for (const c of ['x', 'y']) await json(await subscribe({ channel: ch, clientId: c }), 201)
    const { items } = await allPages(gw, '/push/channels?limit=2')
    expect(items.filter((c: string) => c.includes(tag))).toEqual(chans)
    expect(items).toEqual([...items].sort())
    expect(new Set(items).size).toBe(items.length)
    // a channel whose last subscription goes is listed no more
    await gw.request(`${SUBS}?channel=${chans[1]}`, { method: 'DELETE' })
    expect((await allPages(gw, '/push/channels')).items.filter((c: string) => c.includes(tag))).toEqual([
      chans[0],
      chans[2],
    ])
  })
})

describe('removing', () => {
  test('by channel and subscriber, by subscriber everywhere, or a whole channel', async () => {
    const tag = fresh('rm')
    const [c1, c2] = [`pushenabled:${tag}-1`, `pushenabled:${tag}-2`]
    for (const ch of [c1, c2])
      for (const c of ['u1', 'u2']) await json(await subscribe({ channel: ch, clientId: c }), 201)
    expect((await gw.request(`${SUBS}?channel=${c1}&clientId=u1`, { method: 'DELETE' })).status).toBe(204)
    expect(await list(`channel=${c1}`)).toEqual([{ channel: c1, clientId: 'u2' }])
    await gw.request(`${SUBS}?clientId=u2`, { method: 'DELETE' })
    expect(await list(`channel=${c1}`)).toEqual([])
    expect(await list(`channel=${c2}`)).toEqual([{ channel: c2, clientId: 'u1' }])
    await gw.request(`${SUBS}?channel=${c2}`, { method: 'DELETE' })
    expect(await list(`channel=${c2}`)).toEqual([])
    await expectError(await gw.request(SUBS, { method: 'DELETE' }), 400, 40003)
    await expectError(await gw.request(`${SUBS}?deviceId=a&clientId=b`, { method: 'DELETE' }), 400, 40003)
  })
})

describe('capabilities', () => {
  test('push-subscribe: a client subscribes, lists and removes only itself', async () => {
    const ch = `pushenabled:${fresh('own')}`
    const init = { key: pg.clientKey, headers: as('ivy') }
    expect(await json(await subscribe({ channel: ch, clientId: 'ivy' }, init), 201)).toEqual({
      channel: ch,
      clientId: 'ivy',
    })
    await expectError(await subscribe({ channel: ch, clientId: 'jack' }, init), 403, 40160)
    expect(await list(`clientId=ivy&channel=${ch}`, init)).toEqual([{ channel: ch, clientId: 'ivy' }])
    await expectError(await gw.request(`${SUBS}?channel=${ch}`, init), 403, 40160)
    await expectError(await gw.request(`${SUBS}?clientId=jack`, init), 403, 40160)
    await expectError(await gw.request(`${SUBS}?clientId=jack`, { method: 'DELETE', ...init }), 403, 40160)
    await expectError(await gw.request('/push/channels', init), 403, 40160)
    expect((await gw.request(`${SUBS}?clientId=ivy`, { method: 'DELETE', ...init })).status).toBe(204)
  })

  test('push-subscribe is needed on the channel itself', async () => {
    await gw.backend.control.putNamespace({
      appId: APP_ID,
      id: 'vip',
      persisted: false,
      pushEnabled: true,
      mutableMessages: false,
    })
    await expectError(
      await subscribe({ channel: 'vip:x', clientId: 'ivy' }, { key: pg.clientKey, headers: as('ivy') }),
      403,
      40160,
    )
    await expectError(
      await subscribe({ channel: 'pushenabled:x', clientId: 'ivy' }, { key: pg.plainKey, headers: as('ivy') }),
      403,
      40160,
    )
  })

  test('a device subscribes itself with its identity token beside the client credentials', async () => {
    const id = fresh('selfsub')
    const token = (await register(gw, device(id))).deviceIdentityToken.token
    const ch = `pushenabled:${fresh('dev')}`
    const anonymous = { key: pg.clientKey }
    await expectError(await subscribe({ channel: ch, deviceId: id }, anonymous), 403, 40160)
    const init = { key: pg.clientKey, headers: deviceToken(token) }
    expect(await json(await subscribe({ channel: ch, deviceId: id }, init), 201)).toEqual({ channel: ch, deviceId: id })
    expect(await list(`deviceId=${id}`, init)).toEqual([{ channel: ch, deviceId: id }])
    // the token alone proves the device but grants no capability to subscribe
    await expectError(
      await subscribe({ channel: ch, deviceId: id }, { key: null, headers: deviceToken(token) }),
      403,
      40160,
    )
    expect(await list(`deviceId=${id}`, { key: null, headers: deviceToken(token) })).toHaveLength(1)
    expect(
      (
        await gw.request(`${SUBS}?deviceId=${id}&channel=${ch}`, {
          method: 'DELETE',
          key: null,
          headers: deviceToken(token),
        })
      ).status,
    ).toBe(204)
    expect(await list(`deviceId=${id}`)).toEqual([])
  })
})
