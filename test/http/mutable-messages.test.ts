/**
 * Message updates, deletes and appends over HTTP: the edge cases the official client does not
 * reach (compat/mutable-messages covers what it does). Both backends.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { pack, unpack } from 'msgpackr'
import { TestClock, addKey, createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { expectError } from '../helpers/errors'
import {
  freshMutable as fresh,
  getMessage as get,
  messagesPath as path,
  mutableNamespace,
  publishOne,
} from '../helpers/mutable'
import { openSse } from '../helpers/sse'

let gw: TestGateway
beforeAll(async () => {
  gw = await createTestGateway({ maxMessageSize: 1000, maxMessageVersions: 4 })
  await mutableNamespace(gw)
})
afterAll(async () => {
  await gw.close()
})

const publish = (ch: string, body: unknown, g = gw) => publishOne(g, ch, body)
const patch = (ch: string, serial: string, body: unknown, init: { key?: string; g?: TestGateway } = {}) =>
  (init.g ?? gw).request(path(ch, `/${serial}`), { method: 'PATCH', json: body, key: init.key })
const getMessage = (ch: string, serial: string, g = gw) => get(g, ch, serial)
const versions = async (ch: string, serial: string, qs = '') => {
  const r = await gw.request(path(ch, `/${serial}/versions${qs}`))
  expect(r.status).toBe(200)
  return { items: (await r.json()) as Record<string, any>[], link: r.headers.get('link') ?? '' }
}

describe('PATCH refusals', () => {
  test('bodies that are not a change: 400 with the field named', async () => {
    const ch = fresh()
    const s = await publish(ch, { name: 'n', data: 'd' })
    await expectError(await gw.request(path(ch, `/${s}`), { method: 'PATCH', json: 'text' }), 400, 40001)
    for (const action of [0, 3, 4, 'message.create', 'sideways'])
      await expectError(await patch(ch, s, { action, data: 'x' }), 400, 40003)
    await expectError(await patch(ch, s, { action: 5 }), 400, 40013)
    await expectError(await patch(ch, s, { action: 1, data: true }), 400, 40013)
    await expectError(await patch(ch, s, { action: 1, name: 5 }), 400, 40001)
    await expectError(await patch(ch, s, { action: 1, version: 'why' }), 400, 40001)
    await expectError(await patch(ch, s, { action: 1, version: { description: 5 } }), 400, 40001)
    await expectError(await patch(ch, s, { action: 1, version: { metadata: [1] } }), 400, 40001)
    // nothing of it was recorded
    expect((await versions(ch, s)).items).toHaveLength(1)
  })

  test('the operation clientId must be the credentials’ own when they identify a client (40012)', async () => {
    const ch = fresh()
    const key = await addKey(gw, 'ident', { capability: { 'mut:*': ['*'] } })
    const s = await publish(ch, { data: 'd' })
    const asAlice = { 'x-ably-clientid': Buffer.from('alice').toString('base64') }
    const r = await gw.request(path(ch, `/${s}`), {
      method: 'PATCH',
      json: { action: 1, data: 'x', version: { clientId: 'bob' } },
      key,
      headers: asAlice,
    })
    await expectError(r, 400, 40012)
    const ok = await gw.request(path(ch, `/${s}`), { method: 'PATCH', json: { data: 'x' }, key, headers: asAlice })
    expect(ok.status).toBe(200)
    expect((await getMessage(ch, s)).version.clientId).toBe('alice')
  })

  test('93002 on channels outside a mutableMessages namespace; reserved service channels are 403', async () => {
    const s = await publish('plain-channel', { data: 'd' })
    await expectError(await patch('plain-channel', s, { data: 'x' }), 400, 93002)
    await expectError(await patch('other:x', s, { data: 'x' }), 400, 93002)
    await expectError(await patch('mut:room::$chat', s, { data: 'x' }), 403, 40160)
  })

  test('404 for serials that name no message: unknown, malformed, a version, a presence event', async () => {
    const ch = fresh()
    const s = await publish(ch, { data: 'd' })
    const v = ((await (await patch(ch, s, { data: 'x' })).json()) as { versionSerial: string }).versionSerial
    for (const serial of ['01000000000000-000000', 'abc', '1-1', v]) {
      await expectError(await gw.request(path(ch, `/${serial}`)), 404, 40400)
      await expectError(await gw.request(path(ch, `/${serial}/versions`)), 404, 40400)
      await expectError(await patch(ch, serial, { data: 'y' }), 404, 40400)
    }
  })

  test('capabilities: history to read; update/delete -own only for the identified publisher, -any for all', async () => {
    const ch = fresh()
    const reader = await addKey(gw, 'reader', { capability: { 'mut:*': ['publish', 'subscribe'] } })
    const own = await addKey(gw, 'owner', {
      capability: { 'mut:*': ['publish', 'history', 'message-update-own', 'message-delete-own'] },
    })
    const s = await publish(ch, { data: 'd', clientId: 'alice' })
    await expectError(await gw.request(path(ch, `/${s}`), { key: reader }), 403, 40160)
    await expectError(await gw.request(path(ch, `/${s}/versions`), { key: reader }), 403, 40160)
    // no update capability at all: refused before the message is looked up
    await expectError(await patch(ch, '01000000000000-000000', { data: 'x' }, { key: reader }), 403, 40160)
    // -own without an identified client, or as someone else
    await expectError(await patch(ch, s, { data: 'x' }, { key: own }), 403, 40160)
    const asBob = { 'x-ably-clientid': Buffer.from('bob').toString('base64') }
    const r = await gw.request(path(ch, `/${s}`), { method: 'PATCH', json: { action: 2 }, key: own, headers: asBob })
    await expectError(r, 403, 40160)
    const asAlice = { 'x-ably-clientid': Buffer.from('alice').toString('base64') }
    const ok = await gw.request(path(ch, `/${s}`), { method: 'PATCH', json: { action: 2 }, key: own, headers: asAlice })
    expect(ok.status).toBe(200)
  })
})

describe('bounds', () => {
  test('a change whose message would exceed MAX_MESSAGE_SIZE is 413 and changes nothing', async () => {
    const ch = fresh()
    const s = await publish(ch, { name: 'n', data: 'x'.repeat(900) })
    await expectError(await patch(ch, s, { action: 5, data: 'y'.repeat(200) }), 413, 40009)
    await expectError(await patch(ch, s, { action: 1, extras: { big: 'z'.repeat(200) } }), 413, 40009)
    // the operation's own description and metadata count too
    await expectError(
      await patch(ch, s, { action: 1, data: 'short', version: { description: 'd'.repeat(1000) } }),
      413,
      40009,
    )
    expect(await patch(ch, s, { action: 5, data: 'y'.repeat(50) })).toHaveProperty('status', 200)
    expect((await versions(ch, s)).items).toHaveLength(2)
  })

  test('appends must match the data: text to text of the same encoding, bytes to bytes (40013)', async () => {
    const ch = fresh()
    const text = await publish(ch, { data: 'abc' })
    const bytes = await gw.request(path(ch, `/${text}`), {
      method: 'PATCH',
      body: new Uint8Array(pack({ action: 5, data: new Uint8Array([1]) })),
      headers: { 'content-type': 'application/x-msgpack' },
    })
    await expectError(bytes, 400, 40013)
    await expectError(await patch(ch, text, { action: 5, data: { not: 'text' } }), 400, 40013)
    const json = await publish(ch, { data: { a: 1 } })
    await expectError(await patch(ch, json, { action: 5, data: 'plain' }), 400, 40013)
    // base64 text is appended as the bytes it stands for
    const bin = await publish(ch, { data: Buffer.from([1, 2]).toString('base64'), encoding: 'base64' })
    expect(
      (await patch(ch, bin, { action: 5, data: Buffer.from([3]).toString('base64'), encoding: 'base64' })).status,
    ).toBe(200)
    const r = await gw.request(path(ch, `/${bin}`), { headers: { accept: 'application/x-msgpack' } })
    expect([...(unpack(Buffer.from(await r.arrayBuffer())).data as Uint8Array)]).toEqual([1, 2, 3])
  })

  test('a message has at most MAX_MESSAGE_VERSIONS versions', async () => {
    const ch = fresh()
    const s = await publish(ch, { data: 'v' })
    for (let i = 0; i < 3; i++) expect((await patch(ch, s, { action: 5, data: String(i) })).status).toBe(200)
    await expectError(await patch(ch, s, { action: 5, data: 'more' }), 400, 40000)
    expect((await getMessage(ch, s)).data).toBe('v012')
  })

  test('a change is a published message: charged to the message rate limit, refused whole (429)', async () => {
    const clock = new TestClock()
    const g = await createTestGateway({ rateLimits: true, limitMessagesPerSecond: 2 }, clock)
    try {
      await mutableNamespace(g)
      const ch = fresh()
      const s = await publish(ch, { data: 'a' }, g)
      expect((await patch(ch, s, { action: 5, data: 'b' }, { g })).status).toBe(200)
      await expectError(await patch(ch, s, { action: 5, data: 'c' }, { g }), 429, 42910)
      expect((await getMessage(ch, s, g)).data).toBe('ab')
      clock.advance(1000)
      expect((await patch(ch, s, { action: 5, data: 'c' }, { g })).status).toBe(200)
    } finally {
      await g.close()
    }
  })

  test('versions query parameters are checked (40003)', async () => {
    const ch = fresh()
    const s = await publish(ch, { data: 'd' })
    for (const qs of ['?limit=0', '?limit=1001', '?limit=x', '?direction=up'])
      await expectError(await gw.request(path(ch, `/${s}/versions${qs}`)), 400, 40003)
  })
})

describe('versions and history', () => {
  test('versions page forwards (default) and backwards with Link headers to ./versions', async () => {
    const ch = fresh()
    const s = await publish(ch, { data: 'a' })
    for (const d of ['b', 'c']) await patch(ch, s, { action: 5, data: d })
    const first = await versions(ch, s, '?limit=2')
    expect(first.items.map((m) => [m.action, m.data])).toEqual([
      [0, 'a'],
      [5, 'b'],
    ])
    const next = /<\.\/versions\?([^>]*)>; rel="next"/.exec(first.link)
    expect(next).not.toBeNull()
    expect((await versions(ch, s, `?${next![1]}`)).items.map((m) => m.data)).toEqual(['c'])
    const back = await versions(ch, s, '?direction=backwards')
    expect(back.items.map((m) => m.data)).toEqual(['c', 'b', 'a'])
  })

  test('history of a mutable channel, backwards and paged, has each message once in its latest version', async () => {
    const ch = fresh()
    const serials: string[] = []
    for (let i = 0; i < 4; i++) serials.push(await publish(ch, { name: `m${i}`, data: `v${i}` }))
    await patch(ch, serials[1]!, { data: 'v1 edited' })
    await patch(ch, serials[3]!, { action: 5, data: '+' })
    const r = await gw.request(path(ch, '?limit=3'))
    const page = (await r.json()) as Record<string, any>[]
    expect(page.map((m) => [m.serial, m.data, m.action])).toEqual([
      [serials[3], 'v3+', 1],
      [serials[2], 'v2', 0],
      [serials[1], 'v1 edited', 1],
    ])
    const next = /<\.\/messages\?([^>]*)>; rel="next"/.exec(r.headers.get('link') ?? '')
    const rest = (await (await gw.request(path(ch, `?${next![1]}`))).json()) as Record<string, any>[]
    expect(rest.map((m) => m.serial)).toEqual([serials[0]])
  })

  test('a change published as a message (as realtime clients send it) is that change', async () => {
    const ch = fresh()
    const s = await publish(ch, { name: 'n', data: 'a' })
    const r = await gw.request(path(ch), { method: 'POST', json: { action: 'message.append', serial: s, data: 'b' } })
    expect(r.status).toBe(201)
    const { serials } = (await r.json()) as { serials: string[] }
    expect((await getMessage(ch, s)).version.serial).toBe(serials[0])
    expect((await getMessage(ch, s)).data).toBe('ab')
    await expectError(await gw.request(path(ch), { method: 'POST', json: { action: 1, data: 'x' } }), 400, 40003)
    const two = [
      { action: 1, serial: s, data: 'x' },
      { action: 1, serial: s, data: 'y' },
    ]
    await expectError(await gw.request(path(ch), { method: 'POST', json: two }), 400, 40001)
    const mixed = [{ data: 'new' }, { action: 1, serial: s, data: 'y' }]
    await expectError(await gw.request(path(ch), { method: 'POST', json: mixed }), 400, 40001)
    expect((await getMessage(ch, s)).data).toBe('ab')
  })

  test('event-stream subscribers get each change as a message event with the message serial and version', async () => {
    const base = listen(gw)
    const ch = fresh()
    const sse = await openSse(`${base}/sse?v=1.2&channels=${encodeURIComponent(ch)}&key=${gw.key}`)
    try {
      const s = await publish(ch, { name: 'n', data: 'a' })
      const v = ((await (await patch(ch, s, { action: 5, data: 'b', version: { description: 'd' } })).json()) as any)
        .versionSerial
      const events = await sse.until((e) => e.filter((x) => x.event === 'message').length >= 2)
      const [created, appended] = events.filter((e) => e.event === 'message').map((e) => JSON.parse(e.data))
      expect(appended).toMatchObject({ serial: s, action: 5, name: 'n', data: 'b', timestamp: created.timestamp })
      expect(appended.version).toMatchObject({ serial: v, description: 'd' })
    } finally {
      sse.close()
    }
  })
})
