import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { pack, unpack } from 'msgpackr'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { expectError } from '../helpers/errors'

let gw: TestGateway
beforeAll(async () => {
  gw = await createTestGateway()
})
afterAll(async () => {
  await gw.close()
})

const publish = (channel: string, json: unknown, init: RequestInit = {}) =>
  gw.request(`/channels/${encodeURIComponent(channel)}/messages`, { method: 'POST', json, ...init })
const history = async (channel: string, qs = '') => {
  const r = await gw.request(`/channels/${encodeURIComponent(channel)}/messages${qs}`)
  expect(r.status).toBe(200)
  return { body: (await r.json()) as any[], link: r.headers.get('link') ?? '' }
}

describe('publish', () => {
  test('single message: 201 with channel, messageId and one serial', async () => {
    const r = await publish('p1', { name: 'greeting', data: 'hello' })
    expect(r.status).toBe(201)
    const body = (await r.json()) as any
    expect(body.channel).toBe('p1')
    expect(typeof body.messageId).toBe('string')
    expect(body.serials).toHaveLength(1)
    const { body: items } = await history('p1')
    expect(items[0]).toMatchObject({
      id: `${body.messageId}:0`,
      name: 'greeting',
      data: 'hello',
      serial: body.serials[0],
    })
    expect(typeof items[0].timestamp).toBe('number')
  })

  test('array publish keeps order and gives increasing serials', async () => {
    const r = await publish('p2', [
      { name: 'a', data: '1' },
      { name: 'b', data: '2' },
      { name: 'c', data: '3' },
    ])
    const body = (await r.json()) as any
    expect(body.serials).toHaveLength(3)
    expect([...body.serials].sort()).toEqual(body.serials)
    const { body: items } = await history('p2', '?direction=forwards')
    expect(items.map((m) => m.name)).toEqual(['a', 'b', 'c'])
  })

  test('object data is stored as JSON text with encoding json; extras and encoding are kept', async () => {
    await publish('p3', { name: 'o', data: { x: 1 }, extras: { headers: { h: 'v' } } })
    await publish('p3', { name: 'e', data: 'aGk=', encoding: 'base64' })
    const { body: items } = await history('p3', '?direction=forwards')
    expect(items[0]).toMatchObject({ data: '{"x":1}', encoding: 'json', extras: { headers: { h: 'v' } } })
    expect(items[1]).toMatchObject({ data: 'aGk=', encoding: 'base64' })
  })

  test('client-supplied ids make publishing idempotent', async () => {
    const m = { id: 'idem-base:0', name: 'once', data: 'x' }
    const first = (await (await publish('p4', m)).json()) as any
    const second = (await (await publish('p4', m)).json()) as any
    expect(second.serials).toEqual(first.serials)
    const { body: items } = await history('p4')
    expect(items.filter((i) => i.id === 'idem-base:0')).toHaveLength(1)
  })

  test('ids of a multi-message publish must share one base', async () => {
    await expectError(await publish('p5', [{ id: 'a:0' }, { id: 'b:1' }]), 400, 40031)
    await expectError(await publish('p5', [{ id: 'a:0' }, { name: 'no-id' }]), 400, 40031)
    expect((await history('p5')).body).toHaveLength(0)
  })

  test('a message over 64 KiB is 413 / 40009 and is not stored', async () => {
    await expectError(await publish('p6', { data: 'x'.repeat(65_537) }), 413, 40009)
    await expectError(await publish('p6', [{ data: 'x'.repeat(40_000) }, { data: 'y'.repeat(40_000) }]), 413, 40009)
    expect((await history('p6')).body).toHaveLength(0)
  })

  test('a body over the request limit is 413 before it is read', async () => {
    const r = await gw.request('/channels/p6/messages', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': String(gw.config.maxBodySize + 1) },
      body: 'x',
    })
    await expectError(r, 413, 40009)
  })

  test('invalid messages are 400 in the spec error shape', async () => {
    await expectError(await publish('p7', { name: 5 }), 400, 40001)
    await expectError(await publish('p7', { data: 42 }), 400, 40013)
    await expectError(await publish('p7', []), 400, 40001)
    await expectError(await publish('p7', 'just a string'), 400, 40001)
    await expectError(
      await gw.request('/channels/p7/messages', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"bad',
      }),
      400,
      40001,
    )
    await expectError(
      await gw.request('/channels/p7/messages', {
        method: 'POST',
        headers: { 'content-type': 'application/x-msgpack' },
        body: new Uint8Array([0xc1]),
      }),
      400,
      40001,
    )
  })

  test('channel names arrive URL-encoded', async () => {
    const name = 'ns:with space/and%percent'
    expect((await publish(name, { data: 'enc' })).status).toBe(201)
    const { body } = await history(name)
    expect(body[0].data).toBe('enc')
  })

  test('invalid channel names are 400 / 40010', async () => {
    await expectError(await publish('[meta]log', { data: 'x' }), 400, 40010)
  })

  test('msgpack in and out, binary data round-trips and is base64 in JSON', async () => {
    const bytes = new Uint8Array([0xde, 0xad, 0xbe, 0xef])
    const r = await gw.request('/channels/p8/messages', {
      method: 'POST',
      body: new Uint8Array(pack({ name: 'bin', data: Buffer.from(bytes) })),
      headers: { 'content-type': 'application/x-msgpack', accept: 'application/x-msgpack' },
    })
    expect(r.status).toBe(201)
    expect(r.headers.get('content-type')).toBe('application/x-msgpack')
    expect((unpack(new Uint8Array(await r.arrayBuffer())) as any).serials).toHaveLength(1)
    const mp = await gw.request('/channels/p8/messages', { headers: { accept: 'application/x-msgpack' } })
    const items = unpack(new Uint8Array(await mp.arrayBuffer())) as any[]
    expect(new Uint8Array(items[0].data)).toEqual(bytes)
    const { body } = await history('p8')
    expect(body[0]).toMatchObject({ data: '3q2+7w==', encoding: 'base64' })
  })

  test('form-urlencoded bodies are accepted', async () => {
    const r = await gw.request('/channels/p9/messages', {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'name=form&data=value',
    })
    expect(r.status).toBe(201)
    expect((await history('p9')).body[0]).toMatchObject({ name: 'form', data: 'value' })
  })
})

describe('history', () => {
  const channel = 'h-paging'
  beforeAll(async () => {
    for (let i = 0; i < 25; i++) await publish(channel, { name: `m${i}`, data: String(i) })
  })

  const follow = async (qs: string) => {
    const names: string[] = []
    let next: string | undefined = qs
    let pages = 0
    while (next !== undefined) {
      const { body, link } = await history(channel, next)
      names.push(...body.map((m) => m.name))
      pages++
      const m = /<\.\/messages(\?[^>]*)>; rel="next"/.exec(link)
      next = m ? m[1] : undefined
      expect(link).toContain('rel="first"')
      expect(link).toContain('rel="current"')
    }
    return { names, pages }
  }

  test('pages backwards by default, newest first, no next on the last page', async () => {
    const { names, pages } = await follow('?limit=10')
    expect(pages).toBe(3)
    expect(names).toEqual(Array.from({ length: 25 }, (_, i) => `m${24 - i}`))
  })

  test('pages forwards', async () => {
    const { names } = await follow('?limit=7&direction=forwards')
    expect(names).toEqual(Array.from({ length: 25 }, (_, i) => `m${i}`))
  })

  test('default limit is 100; start and end bound by timestamp', async () => {
    const { body } = await history(channel)
    expect(body).toHaveLength(25)
    const ts = body.map((m) => m.timestamp as number)
    const max = Math.max(...ts)
    const { body: none } = await history(channel, `?start=${max + 1}`)
    expect(none).toHaveLength(0)
    const { body: all } = await history(channel, `?end=${max}`)
    expect(all).toHaveLength(25)
  })

  test('a channel never used returns 200 with []', async () => {
    expect((await history('never-used')).body).toEqual([])
  })

  test.each([
    ['?limit=1001', 40003],
    ['?limit=0', 40003],
    ['?limit=abc', 40003],
    ['?direction=sideways', 40003],
    ['?start=abc', 40003],
    ['?start=10&end=5', 40003],
  ])('bad params %s are 400', async (qs, code) => {
    await expectError(await gw.request(`/channels/${channel}/messages${qs}`), 400, code)
  })
})

test('service sub-channels (chat, LiveObjects) refuse direct publishes', async () => {
  for (const ch of ['room::$chat', 'game::$objects:board']) {
    const r = await publish(ch, { data: 'forged' })
    expect(r.status).toBe(403)
    expect(((await r.json()) as any).error.code).toBe(40160)
  }
})
