/** Push publishing (both backends): direct, batch, channel fan-out, transports and delivery state. */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { APP_ID, ROOT_KEY, listen, type TestGateway } from '../helpers/gateway'
import { messages, openSse } from '../helpers/sse'
import { subscribed } from '../chat/chat-fixture'
import {
  device,
  devicePath,
  expectError,
  fcm,
  fresh,
  json,
  pushGateway,
  register,
  webhookReceiver,
  type PushGateway,
} from './push-fixture'

let pg: PushGateway
let gw: TestGateway
let hook: ReturnType<typeof webhookReceiver>
beforeAll(async () => {
  hook = webhookReceiver()
  pg = await pushGateway({ pushWebhookUrl: hook.url })
  gw = pg.gw
})
afterAll(async () => {
  await gw.close()
  hook.stop()
})

const publish = (body: unknown, qs = '?fullWait=true', key?: string) =>
  gw.request(`/push/publish${qs}`, { method: 'POST', json: body, key })

/** `__ably_push__` messages on a channel, oldest first, with their payloads parsed. */
async function pushes(channel: string): Promise<any[]> {
  const items = await json(await gw.request(`/channels/${encodeURIComponent(channel)}/messages?direction=forwards`))
  return items.filter((m: any) => m.name === '__ably_push__').map((m: any) => JSON.parse(m.data))
}

async function eventually<T>(f: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  let v = await f()
  for (let i = 0; i < 200 && !ok(v); i++) {
    await Bun.sleep(10)
    v = await f()
  }
  return v
}

describe('direct publish', () => {
  test('a push to a clientId reaches its ablyChannel device channel on the event stream', async () => {
    const client = fresh('streamer')
    const id = `${client}-phone`
    await register(gw, device(id, { clientId: client }))
    const base = listen(gw)
    const sse = await openSse(
      `${base}/sse?v=1.2&channels=${encodeURIComponent(`inbox:${id}`)}&key=${encodeURIComponent(ROOT_KEY)}`,
    )
    try {
      expect(sse.status).toBe(200)
      await subscribed(gw, `inbox:${id}`)
      expect(
        await json(
          await publish(
            { recipient: { clientId: client }, notification: { title: 'Hello', body: 'there' }, data: { k: 'v' } },
            '',
          ),
          201,
        ),
      ).toEqual({})
      const [event] = messages(await sse.until((e) => messages(e).length === 1))
      const m = JSON.parse(event!.data)
      expect(m).toMatchObject({ channel: `inbox:${id}`, name: '__ably_push__' })
      expect(JSON.parse(m.data)).toEqual({ notification: { title: 'Hello', body: 'there' }, data: { k: 'v' } })
    } finally {
      sse.close()
    }
  })

  test('to a deviceId with fullWait: answered after delivery, with its outcome', async () => {
    const id = fresh('direct')
    await register(gw, device(id))
    const r = await json(await publish({ recipient: { deviceId: id }, data: { n: '1' } }), 201)
    expect(r).toEqual({ results: [{ deviceId: id, transportType: 'ablyChannel', state: 'ACTIVE' }] })
    expect(await pushes(`inbox:${id}`)).toEqual([{ data: { n: '1' } }])
  })

  test('to every device of a clientId, and to a raw recipient', async () => {
    const client = fresh('multi')
    for (const n of [1, 2]) await register(gw, device(`${client}-${n}`, { clientId: client }))
    const r = await json(await publish({ recipient: { clientId: client }, notification: { title: 't' } }), 201)
    expect(r.results.map((x: any) => x.deviceId).sort()).toEqual([`${client}-1`, `${client}-2`])
    for (const n of [1, 2]) expect(await pushes(`inbox:${client}-${n}`)).toHaveLength(1)
    const raw = fresh('raw')
    await json(
      await publish({
        recipient: { transportType: 'ablyChannel', channel: `inbox:${raw}`, ablyKey: 'ignored', ablyUrl: 'https://x' },
        data: { a: 'b' },
      }),
      201,
    )
    expect(await pushes(`inbox:${raw}`)).toEqual([{ data: { a: 'b' } }])
    // a client without devices: nothing to send, not an error
    expect(await json(await publish({ recipient: { clientId: fresh('nobody') }, data: { a: 'b' } }), 201)).toEqual({
      results: [],
    })
  })

  test('bad input is 400, an unknown device 404, and publishing needs push-admin', async () => {
    await expectError(await publish({ notification: { title: 'x' } }), 400, 40001)
    await expectError(await publish({ recipient: null, notification: { title: 'x' } }), 400, 40001)
    await expectError(await publish({ recipient: {}, notification: { title: 'x' } }), 400, 40001)
    await expectError(
      await publish({ recipient: { transportType: 'telegraph' }, notification: { title: 'x' } }),
      400,
      40001,
    )
    await expectError(await publish({ recipient: { transportType: 'apns' }, notification: { title: 'x' } }), 400, 40001)
    await expectError(
      await publish({ recipient: { deviceId: 'a', clientId: 'b' }, notification: { title: 'x' } }),
      400,
      40001,
    )
    await expectError(await publish({ recipient: { clientId: 'a' } }), 400, 40001)
    await expectError(await publish({ recipient: { clientId: 'a' }, notification: 'text' }), 400, 40001)
    await expectError(await publish({ recipient: { deviceId: fresh('ghost') }, data: { a: 'b' } }), 404, 40400)
    await expectError(await publish({ recipient: { clientId: 'a' }, data: { a: 'b' } }, '', pg.clientKey), 403, 40160)
    expect((await publish({ recipient: { clientId: 'a' }, data: { a: 'b' } }, '', pg.adminKey)).status).toBe(201)
  })
})

describe('batch publish', () => {
  test('each item {recipient, payload} succeeds or fails alone', async () => {
    const id = fresh('batch')
    await register(gw, device(id))
    const r = await json(
      await gw.request('/push/batch/publish?fullWait=true', {
        method: 'POST',
        json: [
          { recipient: { deviceId: id }, payload: { notification: { title: 'one' } } },
          { recipient: { transportType: 'nope' }, payload: { notification: { title: 'two' } } },
          { payload: { notification: { title: 'three' } } },
        ],
      }),
      201,
    )
    expect(r.successCount).toBe(1)
    expect(r.failureCount).toBe(2)
    expect(r.results[0]).toEqual({
      recipient: { deviceId: id },
      results: [{ deviceId: id, transportType: 'ablyChannel', state: 'ACTIVE' }],
    })
    expect(r.results[1].error).toMatchObject({ code: 40001, statusCode: 400 })
    expect(r.results[2].error).toMatchObject({ code: 40001, statusCode: 400 })
    expect(await pushes(`inbox:${id}`)).toEqual([{ notification: { title: 'one' } }])
    const many = Array.from({ length: 101 }, () => ({ recipient: { deviceId: id }, payload: { data: { a: 'b' } } }))
    await expectError(await gw.request('/push/batch/publish', { method: 'POST', json: many }), 400, 40001)
    await expectError(
      await gw.request('/push/batch/publish', { method: 'POST', json: [], key: pg.clientKey }),
      403,
      40160,
    )
  })
})

describe('channel messages with extras.push', () => {
  test('fan out to the devices subscribed directly or through their clientId, each once', async () => {
    const tag = fresh('fan')
    const ch = `pushenabled:${tag}`
    const [direct, viaClient, both, outsider] = ['direct', 'client', 'both', 'outsider'].map((n) => `${tag}-${n}`)
    await register(gw, device(direct!))
    await register(gw, device(viaClient!, { clientId: `${tag}-user` }))
    await register(gw, device(both!, { clientId: `${tag}-user` }))
    await register(gw, device(outsider!))
    for (const body of [
      { channel: ch, deviceId: direct },
      { channel: ch, clientId: `${tag}-user` },
      { channel: ch, deviceId: both },
    ]) {
      await json(await gw.request('/push/channelSubscriptions', { method: 'POST', json: body }), 201)
    }
    const extras = { push: { notification: { title: 'breaking' }, data: { id: '7' } } }
    await json(
      await gw.request(`/channels/${ch}/messages`, { method: 'POST', json: { name: 'news', data: 'text', extras } }),
      201,
    )
    // batch publish goes the same way
    await json(
      await gw.request('/messages', {
        method: 'POST',
        json: [
          { channels: [ch], messages: [{ name: 'plain' }, { name: 'second', extras: { push: { data: { n: '2' } } } }] },
        ],
      }),
      201,
    )
    for (const id of [direct, viaClient, both]) {
      const got = await eventually(
        () => pushes(`inbox:${id}`),
        (p) => p.length >= 2,
      )
      expect(got).toEqual([extras.push, { data: { n: '2' } }])
    }
    expect(await pushes(`inbox:${outsider}`)).toEqual([])
    // the channel message itself is published as usual
    expect((await json(await gw.request(`/channels/${ch}/messages`))).map((m: any) => m.name)).toEqual([
      'second',
      'plain',
      'news',
    ])
  })

  test('nothing is sent when the namespace is no longer push-enabled', async () => {
    const id = fresh('off')
    await gw.backend.control.putNamespace({
      appId: APP_ID,
      id: 'toggle',
      persisted: false,
      pushEnabled: true,
      mutableMessages: false,
    })
    await register(gw, device(id))
    await json(
      await gw.request('/push/channelSubscriptions', { method: 'POST', json: { channel: 'toggle:x', deviceId: id } }),
      201,
    )
    await gw.backend.control.putNamespace({
      appId: APP_ID,
      id: 'toggle',
      persisted: false,
      pushEnabled: false,
      mutableMessages: false,
    })
    await json(
      await gw.request('/channels/toggle:x/messages', {
        method: 'POST',
        json: { extras: { push: { data: { a: 'b' } } } },
      }),
      201,
    )
    await gw.backend.control.putNamespace({
      appId: APP_ID,
      id: 'toggle',
      persisted: false,
      pushEnabled: true,
      mutableMessages: false,
    })
    await json(
      await gw.request('/channels/toggle:x/messages', {
        method: 'POST',
        json: { extras: { push: { data: { a: 'c' } } } },
      }),
      201,
    )
    expect(
      await eventually(
        () => pushes(`inbox:${id}`),
        (p) => p.length >= 1,
      ),
    ).toEqual([{ data: { a: 'c' } }])
  })
})

describe('webhook transport and delivery state', () => {
  test('APNs / FCM / web notifications are POSTed to PUSH_WEBHOOK_URL', async () => {
    const id = fresh('droid')
    await register(gw, device(id, { clientId: 'kim' }, fcm('reg-1')))
    hook.received.length = 0
    await json(await publish({ recipient: { deviceId: id }, notification: { title: 'hi' } }), 201)
    await json(await publish({ recipient: { transportType: 'apns', deviceToken: 'apns-1' }, data: { x: 'y' } }), 201)
    expect(hook.received.map((r) => r.body)).toMatchObject([
      {
        appId: APP_ID,
        deviceId: id,
        clientId: 'kim',
        platform: 'android',
        recipient: fcm('reg-1'),
        payload: { notification: { title: 'hi' } },
      },
      { appId: APP_ID, recipient: { transportType: 'apns', deviceToken: 'apns-1' }, payload: { data: { x: 'y' } } },
    ])
    expect(hook.received[0]!.headers.get('x-ably-push-transport')).toBe('fcm')
  })

  test('failures make a device FAILING, then FAILED (skipped); success or re-registration makes it ACTIVE', async () => {
    const id = fresh('flaky')
    await register(gw, device(id, {}, fcm()))
    const state = async () => (await json(await gw.request(devicePath(id)))).push
    try {
      hook.state.status = 500
      const r = await json(await publish({ recipient: { deviceId: id }, data: { a: '1' } }), 201)
      expect(r.results[0]).toMatchObject({ deviceId: id, state: 'FAILING', error: { code: 50000, statusCode: 500 } })
      expect(await state()).toMatchObject({
        state: 'FAILING',
        error: { code: 50000, message: expect.stringContaining('HTTP 500') },
      })
      hook.state.status = 204
      await json(await publish({ recipient: { deviceId: id }, data: { a: '2' } }), 201)
      const ok = await state()
      expect(ok.state).toBe('ACTIVE')
      expect(ok.error).toBeUndefined()
      hook.state.status = 503
      for (let i = 0; i < 5; i++) await json(await publish({ recipient: { deviceId: id }, data: { a: '3' } }), 201)
      expect((await state()).state).toBe('FAILED')
      expect(
        (await json(await gw.request(`/push/deviceRegistrations?state=FAILED&deviceId=${id}`))).map((d: any) => d.id),
      ).toEqual([id])
      hook.state.status = 200
      const before = hook.received.length
      const skipped = await json(await publish({ recipient: { deviceId: id }, data: { a: '4' } }), 201)
      expect(skipped.results[0]).toMatchObject({ state: 'FAILED', error: { code: 50000 } })
      expect(hook.received.length).toBe(before)
      await json(await gw.request(devicePath(id), { method: 'PUT', json: device(id, {}, fcm('new-token')) }))
      expect(await state()).toEqual({ recipient: fcm('new-token'), state: 'ACTIVE' })
    } finally {
      hook.state.status = 200
    }
  })

  test('without PUSH_WEBHOOK_URL only ablyChannel delivers; others fail with a clear error', async () => {
    const other = await pushGateway()
    try {
      const id = fresh('nowhere')
      await register(
        other.gw,
        device(
          id,
          {},
          { transportType: 'web', targetUrl: 'https://push.example/x', encryptionKey: { p256dh: 'k', auth: 'a' } },
        ),
      )
      const r = await json(
        await other.gw.request('/push/publish?fullWait=true', {
          method: 'POST',
          json: { recipient: { deviceId: id }, notification: { title: 'x' } },
        }),
        201,
      )
      expect(r.results[0]).toMatchObject({
        state: 'FAILING',
        error: { code: 50003, statusCode: 503, message: expect.stringContaining('PUSH_WEBHOOK_URL') },
      })
      const raw = await json(
        await other.gw.request('/push/publish?fullWait=true', {
          method: 'POST',
          json: { recipient: fcm(), data: { a: 'b' } },
        }),
        201,
      )
      expect(raw.results[0]).toMatchObject({ transportType: 'fcm', error: { code: 50003 } })
    } finally {
      await other.gw.close()
    }
  })
})
