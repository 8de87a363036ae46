/**
 * Writing into a channel through push needs what a direct publish needs (both backends): a key
 * with push-admin on one channel only cannot publish, register devices or subscribe elsewhere.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { type TestGateway } from '../helpers/gateway'
import { keyWith } from '../chat/chat-fixture'
import { device, devicePath, expectError, fresh, PUSH_NS, pushGateway, register } from './push-fixture'

let gw: TestGateway
/** push-admin on channel `a` only (the attack's key). */
let narrowAdmin: string
/** push-admin and publish on `a` only. */
let publisherOfA: string
beforeAll(async () => {
  gw = (await pushGateway()).gw
  narrowAdmin = await keyWith(gw, 'narrowadmin', { a: ['push-admin'] })
  publisherOfA = await keyWith(gw, 'publisherofa', { a: ['push-admin', 'publish'] })
})
afterAll(async () => {
  await gw.close()
})

const post = (path: string, json: unknown, key: string) => gw.request(path, { method: 'POST', json, key })
const history = async (channel: string) =>
  (await (await gw.request(`/channels/${encodeURIComponent(channel)}/messages`)).json()) as any[]
const toChannel = (channel: string) => ({ transportType: 'ablyChannel', channel })
const payload = { notification: { title: 'hi' } }

describe('push writes into channels only where a publish may', () => {
  test('a raw ablyChannel recipient needs publish on its channel', async () => {
    await expectError(await post('/push/publish', { recipient: toChannel('b'), ...payload }, narrowAdmin), 403, 40160)
    await expectError(await post('/push/publish', { recipient: toChannel('a'), ...payload }, narrowAdmin), 403, 40160)
    await expectError(await post('/push/publish', { recipient: toChannel('b'), ...payload }, publisherOfA), 403, 40160)
    const batch = await post('/push/batch/publish', [{ recipient: toChannel('b'), payload }], publisherOfA)
    expect(((await batch.json()) as any).results[0].error).toMatchObject({ code: 40160 })
    expect(await history('b')).toEqual([])
    expect(
      (await post('/push/publish?fullWait=true', { recipient: toChannel('a'), ...payload }, publisherOfA)).status,
    ).toBe(201)
    expect(await history('a')).toHaveLength(1)
  })

  test('registering a device whose ablyChannel is elsewhere is refused, push-admin or not', async () => {
    const r = await post('/push/deviceRegistrations', device(fresh('dev'), {}, toChannel('b')), narrowAdmin)
    const e = await expectError(r, 403, 40160)
    expect(e.message).toContain('requires publish on that channel')
    expect(
      (await post('/push/deviceRegistrations', device(fresh('dev'), {}, toChannel('a')), publisherOfA)).status,
    ).toBe(201)
  })

  test('publishing to a device (or a client) whose ablyChannel is elsewhere needs publish there', async () => {
    const id = fresh('victim')
    await register(gw, device(id, { clientId: 'victim' }, toChannel('b'))) // by the root key
    await expectError(await post('/push/publish', { recipient: { deviceId: id }, ...payload }, narrowAdmin), 403, 40160)
    await expectError(
      await post('/push/publish', { recipient: { clientId: 'victim' }, ...payload }, narrowAdmin),
      403,
      40160,
    )
    expect(await history('b')).toEqual([])
    expect((await gw.request(devicePath(id), { method: 'DELETE' })).status).toBe(204)
  })

  test('subscribing to a channel needs push-subscribe or push-admin on that channel', async () => {
    const id = fresh('sub')
    await register(gw, device(id, {}, toChannel('a')))
    const channel = `${PUSH_NS}:b`
    await expectError(await post('/push/channelSubscriptions', { channel, deviceId: id }, narrowAdmin), 403, 40160)
    const wide = await keyWith(gw, 'nsadmin', { [`${PUSH_NS}:*`]: ['push-admin'] })
    expect((await post('/push/channelSubscriptions', { channel, deviceId: id }, wide)).status).toBe(201)
  })
})
