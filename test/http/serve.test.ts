import { afterAll, beforeAll, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { pack } from 'msgpackr'
import { basic, createTestGateway, listen, type TestGateway } from '../helpers/gateway'

/** The server as main.ts runs it: the native publish fast path plus Elysia for everything else. */
let gw: TestGateway
let base: string
beforeAll(async () => { gw = await createTestGateway(); base = listen(gw) })
afterAll(async () => { await gw.close() })

const post = (path: string, body: BodyInit, headers: Record<string, string> = {}) =>
  fetch(base + path, { method: 'POST', body, headers: { authorization: basic(gw.key), 'content-type': 'application/json', ...headers } })

test('JSON publish over the fast path behaves like the Elysia route', async () => {
  const r = await post('/channels/fast%3Aone/messages', JSON.stringify([{ name: 'a', data: 'x' }, { name: 'b', data: { y: 1 } }]))
  expect(r.status).toBe(201)
  const body = (await r.json()) as any
  expect(body).toMatchObject({ channel: 'fast:one' })
  expect(body.serials).toHaveLength(2)
  const items = (await (await fetch(`${base}/channels/fast%3Aone/messages?direction=forwards`, { headers: { authorization: basic(gw.key) } })).json()) as any[]
  expect(items.map((m) => m.name)).toEqual(['a', 'b'])
  expect(items[1]).toMatchObject({ data: '{"y":1}', encoding: 'json' })
})

test('fast path errors are in the spec shape', async () => {
  const cases: Array<[Response, number, number]> = [
    [await post('/channels/f/messages', '{bad'), 400, 40001],
    [await post('/channels/f/messages', '"string"'), 400, 40001],
    [await post('/channels/f/messages', '{}', { authorization: basic('testapp.rootkey:wrong') }), 401, 40101],
    [await post('/channels/f/messages', JSON.stringify({ data: 'x'.repeat(70_000) })), 413, 40009],
    [await post('/channels/%5Bmeta%5D/messages', '{}'), 400, 40010],
  ]
  for (const [r, status, code] of cases) {
    expect(r.status).toBe(status)
    expect(r.headers.get('content-type')).toBe('application/json')
    expect(r.headers.get('x-ably-errorcode')).toBe(String(code))
    expect(((await r.json()) as any).error).toMatchObject({ code, statusCode: status })
  }
})

test('other publishes (msgpack, query auth) take the full route', async () => {
  const mp = await post('/channels/f2/messages', new Uint8Array(pack({ name: 'm' })), { 'content-type': 'application/x-msgpack' })
  expect(mp.status).toBe(201)
  const q = await fetch(`${base}/channels/f2/messages?key=${encodeURIComponent(gw.key)}`, { method: 'POST', body: '{"name":"q"}', headers: { 'content-type': 'application/json' } })
  expect(q.status).toBe(201)
})

test('a request with a very short Host header is routed correctly', async () => {
  const url = new URL(base)
  const text = await new Promise<string>((resolve, reject) => {
    const s = connect(Number(url.port), url.hostname, () => s.write('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'))
    let out = ''
    s.on('data', (d) => { out += d.toString() })
    s.on('end', () => resolve(out))
    s.on('error', reject)
  })
  expect(text.startsWith('HTTP/1.1 200')).toBe(true)
})
