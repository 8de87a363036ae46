/** Push state survives a restart (embedded: SQLite in the data dir; Redis: the same keys). */
import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { device, devicePath, deviceToken, fcm, json, pushGateway, register } from './push-fixture'

const dir = mkdtempSync(join(tmpdir(), 'gw-push-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

test('devices (with tokens and delivery state), subscriptions and push channels survive a restart', async () => {
  const first = await pushGateway({ dataDir: dir })
  let before: { devices: any[]; subs: any[]; channels: string[]; token: string }
  try {
    const gw = first.gw
    const token = (await register(gw, device('keep-1', { clientId: 'lee', metadata: { v: 1 } }))).deviceIdentityToken
      .token
    await register(gw, device('keep-2', { clientId: 'lee' }, fcm()))
    await register(gw, device('dropped'))
    await json(await gw.request(devicePath('dropped'), { method: 'DELETE' }), 204)
    // no webhook is configured: the fcm device fails its delivery and is FAILING
    await json(
      await gw.request('/push/publish?fullWait=true', {
        method: 'POST',
        json: { recipient: { clientId: 'lee' }, data: { a: 'b' } },
      }),
      201,
    )
    for (const body of [
      { channel: 'pushenabled:a', deviceId: 'keep-1' },
      { channel: 'pushenabled:b', clientId: 'lee' },
    ]) {
      await json(await gw.request('/push/channelSubscriptions', { method: 'POST', json: body }), 201)
    }
    before = {
      devices: await json(await gw.request('/push/deviceRegistrations')),
      subs: await json(await gw.request('/push/channelSubscriptions')),
      channels: await json(await gw.request('/push/channels')),
      token,
    }
    expect(before.devices.map((d) => [d.id, d.push.state])).toEqual([
      ['keep-1', 'ACTIVE'],
      ['keep-2', 'FAILING'],
    ])
    expect(before.devices[1].push.error.code).toBe(50003)
  } finally {
    await first.gw.close()
  }

  const second = await pushGateway({ dataDir: dir })
  try {
    const gw = second.gw
    expect(await json(await gw.request('/push/deviceRegistrations'))).toEqual(before.devices)
    expect(await json(await gw.request('/push/channelSubscriptions'))).toEqual(before.subs)
    expect(await json(await gw.request('/push/channels'))).toEqual(['pushenabled:a', 'pushenabled:b'])
    expect(before.subs).toHaveLength(2)
    // the device's identity token still works, and channel fan-out still reaches it
    expect((await gw.request(devicePath('keep-1'), { key: null, headers: deviceToken(before.token) })).status).toBe(200)
    await json(
      await gw.request('/channels/pushenabled:a/messages', {
        method: 'POST',
        json: { extras: { push: { data: { after: 'restart' } } } },
      }),
      201,
    )
    let got: any[] = []
    for (let i = 0; i < 200 && got.length === 0; i++) {
      got = (await json(await gw.request('/channels/inbox:keep-1/messages'))).filter(
        (m: any) => m.name === '__ably_push__' && m.data.includes('restart'),
      )
      if (!got.length) await Bun.sleep(10)
    }
    expect(got).toHaveLength(1)
  } finally {
    await second.gw.close()
  }
})
