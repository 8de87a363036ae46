/** Device registrations over HTTP (both backends): register, upsert, update, read, list, remove, tokens, access. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { APP_ID, type TestGateway } from '../helpers/gateway'
import {
  allPages,
  as,
  device,
  devicePath,
  deviceToken,
  expectError,
  fcm,
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

const put = (id: string, body: unknown, init: { key?: string; headers?: Record<string, string> } = {}) =>
  gw.request(devicePath(id), { method: 'PUT', json: body, ...init })

describe('registration', () => {
  test('POST registers a device and answers its details with a device identity token', async () => {
    const id = fresh('dev')
    const d = await register(gw, device(id, { clientId: 'alice', deviceSecret: 's3', metadata: { model: 'x1' } }))
    expect(d).toMatchObject({
      id,
      clientId: 'alice',
      platform: 'android',
      formFactor: 'phone',
      metadata: { model: 'x1' },
      deviceSecret: 's3',
      push: { recipient: { transportType: 'ablyChannel', channel: `inbox:${id}` }, state: 'ACTIVE' },
    })
    expect(typeof d.deviceIdentityToken.token).toBe('string')
    expect(d.push.error).toBeUndefined()
    expect(await json(await gw.request(devicePath(id)))).toEqual(d)
  })

  test('metadata defaults to an empty object and unset (null) fields are ignored', async () => {
    const id = fresh('dev')
    const d = await register(gw, { ...device(id), clientId: null, metadata: null, deviceSecret: null })
    expect(d.metadata).toEqual({})
    expect('clientId' in d).toBe(false)
    expect('deviceSecret' in d).toBe(false)
  })

  test('PUT creates, then replaces, keeping the identity token; a body id must match the path', async () => {
    const id = fresh('dev')
    const created = await json(await put(id, { ...device(id), id: undefined, platform: 'ios', formFactor: 'tablet' }))
    expect(created).toMatchObject({ id, platform: 'ios', formFactor: 'tablet' })
    const replaced = await json(await put(id, device(id, { formFactor: 'watch' }, fcm('t2'))))
    expect(replaced).toMatchObject({
      id,
      platform: 'android',
      formFactor: 'watch',
      push: { recipient: fcm('t2'), state: 'ACTIVE' },
    })
    expect(replaced.deviceIdentityToken.token).toBe(created.deviceIdentityToken.token)
    await expectError(await put(id, device('another-id')), 400, 40001)
  })

  test('PATCH changes clientId, metadata and recipient only; unknown devices are 404', async () => {
    const id = fresh('dev')
    await register(gw, device(id, { clientId: 'before', metadata: { a: 1 } }))
    const r = await gw.request(devicePath(id), {
      method: 'PATCH',
      json: { clientId: 'after', metadata: { b: 2 }, push: { recipient: fcm() } },
    })
    expect(await json(r)).toMatchObject({
      id,
      clientId: 'after',
      metadata: { b: 2 },
      platform: 'android',
      push: { recipient: fcm(), state: 'ACTIVE' },
    })
    const again = await json(await gw.request(devicePath(id), { method: 'PATCH', json: { metadata: { c: 3 } } }))
    expect(again).toMatchObject({ clientId: 'after', metadata: { c: 3 }, push: { recipient: fcm() } })
    await expectError(
      await gw.request(devicePath(fresh('ghost')), { method: 'PATCH', json: { metadata: {} } }),
      404,
      40400,
    )
    await expectError(
      await gw.request(devicePath(id), {
        method: 'PATCH',
        json: { push: { recipient: { transportType: 'carrier-pigeon' } } },
      }),
      400,
      40001,
    )
  })

  test('GET of a device that is not registered is 404', async () => {
    await expectError(await gw.request(devicePath(fresh('ghost'))), 404, 40400)
  })
})

describe('bad input is a 400 in the error shape', () => {
  // an unknown platform is 40000, as the hosted service answers; other bad fields are 40001 (40010 for a channel)
  const cases: Array<[string, number, (id: string) => unknown]> = [
    ['unknown platform', 40000, (id) => ({ ...device(id), platform: 'symbian' })],
    ['platform not a string', 40000, (id) => ({ ...device(id), platform: 7 })],
    ['missing platform', 40000, (id) => ({ ...device(id), platform: undefined })],
    ['unknown form factor', 40001, (id) => ({ ...device(id), formFactor: 'toaster' })],
    ['unknown transport', 40001, (id) => device(id, {}, { transportType: 'smtp', address: 'a@b' })],
    ['transport without its token', 40001, (id) => device(id, {}, { transportType: 'apns' })],
    ['missing recipient', 40001, (id) => ({ ...device(id), push: {} })],
    ['missing push', 40001, (id) => ({ ...device(id), push: undefined })],
    ['missing id', 40001, (id) => ({ ...device(id), id: undefined })],
    ['metadata not an object', 40001, (id) => ({ ...device(id), metadata: 'text' })],
    ['clientId "*"', 40001, (id) => ({ ...device(id), clientId: '*' })],
    [
      'invalid ablyChannel channel',
      40010,
      (id) => device(id, {}, { transportType: 'ablyChannel', channel: '[meta]x' }),
    ],
  ]
  for (const [what, code, body] of cases) {
    test(`${what}: ${code}`, async () => {
      const r = await gw.request('/push/deviceRegistrations', { method: 'POST', json: body(fresh('bad')) })
      await expectError(r, 400, code)
    })
  }

  test('an unknown platform in a PATCH is 40000 too', async () => {
    const id = fresh('patched')
    await register(gw, device(id))
    const r = await gw.request(devicePath(id), { method: 'PATCH', json: { platform: 'symbian' } })
    expect((await expectError(r, 400, 40000)).message).toContain('ios, android, browser')
  })

  test('the message names what is allowed', async () => {
    const r = await gw.request('/push/deviceRegistrations', {
      method: 'POST',
      json: { ...device(fresh('bad')), formFactor: 'toaster' },
    })
    expect((await r.json()).error.message).toContain('phone, tablet, desktop, tv, watch, car, embedded, other')
  })
})

describe('listing and removal', () => {
  test('list filters by clientId, deviceId and state and pages with Link headers', async () => {
    const client = fresh('lister')
    const ids = Array.from({ length: 5 }, (_, i) => `${client}-d${i}`)
    for (const id of ids) await register(gw, device(id, { clientId: client }))
    const { items, pages } = await allPages(gw, `/push/deviceRegistrations?clientId=${client}&limit=2`)
    expect(pages).toBe(3)
    expect(items.map((d) => d.id)).toEqual(ids)
    expect(await json(await gw.request(`/push/deviceRegistrations?deviceId=${ids[3]}`))).toMatchObject([{ id: ids[3] }])
    expect(await json(await gw.request(`/push/deviceRegistrations?clientId=${client}&state=FAILED`))).toEqual([])
    expect((await json(await gw.request(`/push/deviceRegistrations?clientId=${client}&state=ACTIVE`))).length).toBe(5)
    await expectError(await gw.request('/push/deviceRegistrations?state=BROKEN'), 400, 40003)
    await expectError(await gw.request('/push/deviceRegistrations?limit=1001'), 400, 40003)
  })

  test('DELETE by id removes the device and its subscriptions; an unknown id is fine', async () => {
    const id = fresh('gone')
    await register(gw, device(id))
    await json(
      await gw.request('/push/channelSubscriptions', {
        method: 'POST',
        json: { channel: 'pushenabled:gone', deviceId: id },
      }),
      201,
    )
    expect((await gw.request(devicePath(id), { method: 'DELETE' })).status).toBe(204)
    await expectError(await gw.request(devicePath(id)), 404, 40400)
    expect(await json(await gw.request(`/push/channelSubscriptions?deviceId=${id}`))).toEqual([])
    expect((await gw.request(devicePath(id), { method: 'DELETE' })).status).toBe(204)
  })

  test('DELETE by clientId or deviceId filter; no filter is refused', async () => {
    const client = fresh('bulk')
    for (let i = 0; i < 3; i++) await register(gw, device(`${client}-${i}`, { clientId: client }))
    const other = fresh('keep')
    await register(gw, device(other, { clientId: 'someone-else' }))
    expect((await gw.request(`/push/deviceRegistrations?clientId=${client}`, { method: 'DELETE' })).status).toBe(204)
    expect(await json(await gw.request(`/push/deviceRegistrations?clientId=${client}`))).toEqual([])
    expect((await gw.request(`/push/deviceRegistrations?deviceId=${other}`, { method: 'DELETE' })).status).toBe(204)
    await expectError(await gw.request(devicePath(other)), 404, 40400)
    await expectError(await gw.request('/push/deviceRegistrations', { method: 'DELETE' }), 400, 40003)
  })
})

describe('device identity tokens', () => {
  test('the device authenticates with X-Ably-DeviceToken alone, or as a Bearer token', async () => {
    const id = fresh('self')
    const token = (await register(gw, device(id, { clientId: 'carol' }))).deviceIdentityToken.token
    expect(await json(await gw.request(devicePath(id), { key: null, headers: deviceToken(token) }))).toMatchObject({
      id,
    })
    const bearer = { authorization: `Bearer ${Buffer.from(token).toString('base64')}` }
    const patched = await json(
      await gw.request(devicePath(id), {
        method: 'PATCH',
        key: null,
        headers: bearer,
        json: { push: { recipient: { transportType: 'ablyChannel', channel: `inbox:${id}` } }, metadata: { v: 2 } },
      }),
    )
    expect(patched.metadata).toEqual({ v: 2 })
    // but only itself
    const other = fresh('other')
    await register(gw, device(other))
    await expectError(await gw.request(devicePath(other), { key: null, headers: deviceToken(token) }), 403, 40160)
    await expectError(
      await gw.request('/push/publish', {
        method: 'POST',
        key: null,
        headers: deviceToken(token),
        json: { recipient: { deviceId: id }, data: { a: '1' } },
      }),
      403,
      40160,
    )
    await expectError(await gw.request(devicePath(id), { key: null, headers: deviceToken(token + 'x') }), 401, 40101)
  })

  test('resetUpdateToken issues a new token and the old one stops working', async () => {
    const id = fresh('reset')
    const old = (await register(gw, device(id))).deviceIdentityToken.token
    const reset = await json(
      await gw.request(devicePath(id, '/resetUpdateToken'), { method: 'POST', key: null, headers: deviceToken(old) }),
    )
    expect(reset.id).toBe(id)
    expect(reset.deviceIdentityToken.token).not.toBe(old)
    await expectError(await gw.request(devicePath(id), { key: null, headers: deviceToken(old) }), 401, 40101)
    expect(
      (await gw.request(devicePath(id), { key: null, headers: deviceToken(reset.deviceIdentityToken.token) })).status,
    ).toBe(200)
    // the device removes itself
    expect(
      (
        await gw.request(devicePath(id), {
          method: 'DELETE',
          key: null,
          headers: deviceToken(reset.deviceIdentityToken.token),
        })
      ).status,
    ).toBe(204)
    await expectError(await gw.request(devicePath(fresh('ghost'), '/resetUpdateToken'), { method: 'POST' }), 404, 40400)
  })
})

test('a device token alone is held to the app rules (TLS only)', async () => {
  const id = fresh('tls')
  const token = (await register(gw, device(id))).deviceIdentityToken.token
  const control = gw.backend.control
  const app = (await control.getApp(APP_ID))!
  await control.createApp({ ...app, tlsOnly: true })
  try {
    await expectError(await gw.request(devicePath(id), { key: null, headers: deviceToken(token) }), 403, 40311)
    expect(
      (
        await gw.request(devicePath(id), {
          key: null,
          headers: { ...deviceToken(token), 'x-forwarded-proto': 'https' },
        })
      ).status,
    ).toBe(200)
  } finally {
    await control.createApp(app)
  }
})

describe('capabilities', () => {
  test('without push capabilities nothing is allowed', async () => {
    const id = fresh('nocap')
    await expectError(
      await gw.request('/push/deviceRegistrations', { method: 'POST', json: device(id), key: pg.plainKey }),
      403,
      40160,
    )
    await register(gw, device(id, { clientId: 'dave' }))
    await expectError(await gw.request(devicePath(id), { key: pg.plainKey, headers: as('dave') }), 403, 40160)
  })

  test('push-subscribe: a client registers, reads, lists and removes only its own devices', async () => {
    const mine = fresh('mine')
    const init = { key: pg.clientKey, headers: as('erin') }
    const d = await register(gw, device(mine, { clientId: 'erin' }), init)
    expect(d.clientId).toBe('erin')
    expect((await gw.request(devicePath(mine), init)).status).toBe(200)
    expect(
      (await json(await gw.request('/push/deviceRegistrations?clientId=erin', init))).map((x: any) => x.id),
    ).toEqual([mine])
    await expectError(await gw.request('/push/deviceRegistrations', init), 403, 40160)
    await expectError(await gw.request('/push/deviceRegistrations?clientId=frank', init), 403, 40160)
    // not for another client, and not someone else's device
    await expectError(
      await gw.request('/push/deviceRegistrations', {
        method: 'POST',
        json: device(fresh('x'), { clientId: 'frank' }),
        ...init,
      }),
      403,
      40160,
    )
    const theirs = fresh('theirs')
    await register(gw, device(theirs, { clientId: 'frank' }))
    await expectError(await gw.request(devicePath(theirs), init), 403, 40160)
    await expectError(await put(theirs, device(theirs, { clientId: 'erin' }), init), 403, 40160)
    await expectError(await gw.request(devicePath(theirs), { method: 'DELETE', ...init }), 403, 40160)
    await expectError(
      await gw.request(`/push/deviceRegistrations?clientId=frank`, { method: 'DELETE', ...init }),
      403,
      40160,
    )
    expect((await gw.request(devicePath(mine), { method: 'DELETE', ...init })).status).toBe(204)
  })

  test('an ablyChannel recipient needs publish on its channel without push-admin', async () => {
    const init = { key: pg.clientKey, headers: as('gina') }
    const r = await gw.request('/push/deviceRegistrations', {
      method: 'POST',
      json: device(
        fresh('g'),
        { clientId: 'gina' },
        { transportType: 'ablyChannel', channel: 'pushenabled:elsewhere' },
      ),
      ...init,
    })
    await expectError(r, 403, 40160)
  })

  test('push-admin on any resource manages every device', async () => {
    const id = fresh('adm')
    // (an fcm device: an ablyChannel one would need publish on its channel, which this key lacks)
    await register(gw, device(id, { clientId: 'hank' }, fcm()), { key: pg.adminKey })
    expect((await gw.request(devicePath(id), { key: pg.adminKey })).status).toBe(200)
    expect((await gw.request(devicePath(id), { method: 'DELETE', key: pg.adminKey })).status).toBe(204)
  })
})
