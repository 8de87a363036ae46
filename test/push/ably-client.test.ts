/**
 * The official `ably` client's push admin API (`rest.push.admin`) against the gateway on a real
 * port, over msgpack (the Node default) and JSON, on both backends.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import * as Ably from 'ably'
import { ablyError } from '../helpers/ably'
import { listen } from '../helpers/gateway'
import { ABLY_CHANNEL_DISPATCH_MS } from '../../src/core/push/transports'
import { CLIENT_CAPABILITY, fresh, pushGateway, type PushGateway } from './push-fixture'

let pg: PushGateway
let port: number
beforeAll(async () => {
  pg = await pushGateway()
  port = Number(new URL(listen(pg.gw)).port)
})
afterAll(async () => {
  await pg.gw.close()
})

const client = (useBinaryProtocol: boolean, opts: Ably.ClientOptions) =>
  new Ably.Rest({ endpoint: '127.0.0.1', port, tls: false, useBinaryProtocol, logLevel: 0, ...opts })

const androidDevice = (id: string, clientId?: string) => ({
  id,
  clientId,
  platform: 'android' as const,
  formFactor: 'phone' as const,
  deviceSecret: `secret-${id}`,
  push: { recipient: { transportType: 'ablyChannel', channel: `inbox:${id}` } },
})

describe.each([
  { protocol: 'msgpack', useBinaryProtocol: true },
  { protocol: 'json', useBinaryProtocol: false },
])('ably-js push.admin over $protocol', ({ protocol, useBinaryProtocol }) => {
  let rest: Ably.Rest
  beforeAll(() => {
    rest = client(useBinaryProtocol, { key: pg.gw.key })
  })
  const tag = () => fresh(protocol)

  test('deviceRegistrations: save, get, list (paginated), remove, removeWhere', async () => {
    const admin = rest.push.admin.deviceRegistrations
    const owner = tag()
    const ids = [1, 2, 3].map((n) => `${owner}-d${n}`)
    const saved = await admin.save(androidDevice(ids[0]!, owner))
    expect(saved).toMatchObject({
      id: ids[0],
      clientId: owner,
      platform: 'android',
      formFactor: 'phone',
      push: { state: 'ACTIVE', recipient: { transportType: 'ablyChannel' } },
    })
    expect(typeof (saved as any).deviceIdentityToken.token).toBe('string')
    for (const id of ids.slice(1)) await admin.save(androidDevice(id, owner))
    const got = await admin.get(ids[0]!)
    expect(got).toMatchObject({
      id: ids[0],
      clientId: owner,
      deviceSecret: `secret-${ids[0]}`,
      push: { state: 'ACTIVE' },
    })

    const first = await admin.list({ clientId: owner, limit: 2 })
    expect(first.items.map((d) => d.id)).toEqual(ids.slice(0, 2))
    expect(first.hasNext()).toBe(true)
    const second = await first.next()
    expect(second!.items.map((d) => d.id)).toEqual(ids.slice(2))
    expect(second!.hasNext()).toBe(false)
    expect((await admin.list({ deviceId: ids[1]! })).items.map((d) => d.id)).toEqual([ids[1]!])

    await admin.remove(ids[0]!)
    const missing = await ablyError(admin.get(ids[0]!))
    expect([missing.statusCode, missing.code]).toEqual([404, 40400])
    await admin.removeWhere({ clientId: owner })
    expect((await admin.list({ clientId: owner })).items).toEqual([])
  })

  test('deviceRegistrations errors: an unknown platform is 400 / 40000', async () => {
    const admin = rest.push.admin.deviceRegistrations
    for (const platform of ['symbian', 7, null]) {
      const err = await ablyError(admin.save({ ...androidDevice(tag()), platform } as any))
      expect([err.statusCode, err.code]).toEqual([400, 40000])
      expect(err.message).toContain('ios, android, browser')
    }
  })

  test('deviceRegistrations errors: unknown transport, missing recipient', async () => {
    const admin = rest.push.admin.deviceRegistrations
    for (const bad of [
      { ...androidDevice(tag()), push: { recipient: { transportType: 'smoke-signal' } } },
      { ...androidDevice(tag()), push: {} },
    ]) {
      const err = await ablyError(admin.save(bad as any))
      expect([err.statusCode, err.code]).toEqual([400, 40001])
      expect(err.message).toBeString()
    }
  })

  test('channelSubscriptions: save, list, listChannels, remove, removeWhere', async () => {
    const subs = rest.push.admin.channelSubscriptions
    const t = tag()
    const [c1, c2] = [`pushenabled:${t}-1`, `pushenabled:${t}-2`]
    const id = `${t}-dev`
    await rest.push.admin.deviceRegistrations.save(androidDevice(id, `${t}-user`))
    const saved = await subs.save({ channel: c1, clientId: `${t}-user` })
    expect(saved).toMatchObject({ channel: c1, clientId: `${t}-user` })
    await subs.save({ channel: c1, deviceId: id })
    await subs.save({ channel: c2, deviceId: id })

    const page = await subs.list({ channel: c1 })
    expect(page.items.map((s) => ({ ...s }))).toEqual([
      { channel: c1, clientId: `${t}-user` },
      { channel: c1, deviceId: id },
    ])
    const paged = await subs.list({ deviceId: id, limit: 1 })
    expect(paged.items.map((s) => s.channel)).toEqual([c1])
    expect((await paged.next())!.items.map((s) => s.channel)).toEqual([c2])
    const channels = await subs.listChannels({})
    expect(channels.items).toEqual(expect.arrayContaining([c1, c2]))

    await subs.remove({ channel: c1, deviceId: id })
    expect((await subs.list({ channel: c1 })).items.map((s) => ({ ...s }))).toEqual([
      { channel: c1, clientId: `${t}-user` },
    ])
    await subs.removeWhere({ clientId: `${t}-user` })
    await subs.removeWhere({ deviceId: id })
    expect((await subs.list({ channel: c1 })).items).toEqual([])
    expect((await subs.listChannels({})).items).not.toContain(c2)
  })

  test('channelSubscriptions errors: a channel without pushEnabled, both subscriber kinds', async () => {
    const subs = rest.push.admin.channelSubscriptions
    const off = await ablyError(subs.save({ channel: 'plain:nope', clientId: 'x' }))
    expect([off.statusCode, off.code]).toEqual([400, 40000])
    expect(off.message).toContain('pushEnabled')
    const both = await ablyError(subs.save({ channel: 'pushenabled:x', clientId: 'x', deviceId: 'y' }))
    expect([both.statusCode, both.code]).toEqual([400, 40001])
  })

  test('publish reaches the device channel; a bad recipient is refused', async () => {
    const user = tag()
    const id = `${user}-phone`
    await rest.push.admin.deviceRegistrations.save(androidDevice(id, user))
    await rest.push.admin.publish({ clientId: user }, { notification: { title: 'Hi' }, data: { foo: 'bar' } })
    const inbox = rest.channels.get(`inbox:${id}`)
    let items: Ably.InboundMessage[] = []
    for (let i = 0; i < 100 && items.length === 0; i++) {
      items = (await inbox.history()).items
      if (!items.length) await Bun.sleep(10)
    }
    expect(items).toHaveLength(1)
    expect(items[0]!.name).toBe('__ably_push__')
    expect(JSON.parse(items[0]!.data)).toEqual({ notification: { title: 'Hi' }, data: { foo: 'bar' } })
    const err = await ablyError(rest.push.admin.publish({ transportType: 'pigeon' }, { notification: { title: 'x' } }))
    expect([err.statusCode, err.code]).toEqual([400, 40001])
    const missing = await ablyError(rest.push.admin.publish(undefined, { notification: { title: 'x' } }))
    expect([missing.statusCode, missing.code]).toEqual([400, 40001])
  })

  test('a notification reaches a client that starts attaching its channel as the publish goes out', async () => {
    // as ably-js's push_channel_subscription_client_id: subscribe (the attach not awaited), then
    // publish at once; the push queue's dispatch delay lets the attach complete first
    const user = tag()
    const id = `${user}-phone`
    const channel = `pushenabled:${user}`
    await rest.push.admin.deviceRegistrations.save(androidDevice(id, user))
    await rest.push.admin.channelSubscriptions.save({ channel, deviceId: id })
    const realtime = new Ably.Realtime({
      endpoint: '127.0.0.1',
      port,
      tls: false,
      useBinaryProtocol,
      key: pg.gw.key,
      logLevel: 0,
    })
    try {
      await realtime.connection.whenState('connected')
      const inbox = realtime.channels.get(`inbox:${id}`)
      const got = new Promise<[Ably.InboundMessage, number]>(
        (resolve) => void inbox.subscribe('__ably_push__', (m) => resolve([m, performance.now()])),
      )
      const sent = performance.now()
      await rest.channels.get(channel).publish({ name: 'n', data: 'd', extras: { push: { data: { foo: 'bar' } } } })
      const [msg, at] = (await Promise.race([got, Bun.sleep(10_000).then(() => [])])) as [Ably.InboundMessage?, number?]
      expect(msg && JSON.parse(msg.data)).toMatchObject({ data: { foo: 'bar' } })
      // never in the publish's own step: at least the dispatch delay after it was made
      expect(at! - sent).toBeGreaterThanOrEqual(ABLY_CHANNEL_DISPATCH_MS - 2)
    } finally {
      realtime.close()
    }
  })

  test('a client without push-admin manages only itself', async () => {
    const me = tag()
    const limited = client(useBinaryProtocol, { key: pg.clientKey, clientId: me })
    const mine = await limited.push.admin.deviceRegistrations.save(androidDevice(`${me}-own`, me))
    expect(mine.clientId).toBe(me)
    expect((await limited.push.admin.deviceRegistrations.list({ clientId: me })).items.map((d) => d.id)).toEqual([
      `${me}-own`,
    ])
    await limited.push.admin.channelSubscriptions.save({ channel: `pushenabled:${me}`, clientId: me })
    for (const call of [
      () => limited.push.admin.deviceRegistrations.save(androidDevice(`${me}-other`, `${me}-someone-else`)),
      () => limited.push.admin.deviceRegistrations.list({}),
      () => limited.push.admin.channelSubscriptions.listChannels({}),
      () => limited.push.admin.publish({ clientId: me }, { data: { a: 'b' } }),
    ]) {
      const err = await ablyError(call())
      expect([err.statusCode, err.code]).toEqual([403, 40160])
    }
    expect(CLIENT_CAPABILITY['pushenabled:*']).toContain('push-subscribe')
  })
})
