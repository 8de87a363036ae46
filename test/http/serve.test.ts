import { expect, test } from 'bun:test'
import { connect } from 'node:net'
import { basic, useGateway } from '../helpers/gateway'

/** The server as main.ts runs it: the native publish route plus Elysia for everything else (see publish-path.test.ts). */
const ctx = useGateway()

const post = (path: string, body: BodyInit, headers: Record<string, string> = {}) =>
  fetch(ctx.base + path, {
    method: 'POST',
    body,
    headers: { authorization: basic(ctx.gw.key), 'content-type': 'application/json', ...headers },
  })

test('a JSON publish over the native route is stored like any other', async () => {
  const r = await post(
    '/channels/fast%3Aone/messages',
    JSON.stringify([
      { name: 'a', data: 'x' },
      { name: 'b', data: { y: 1 } },
    ]),
  )
  expect(r.status).toBe(201)
  const body = (await r.json()) as any
  expect(body).toMatchObject({ channel: 'fast:one' })
  expect(body.serials).toHaveLength(2)
  const items = (await (
    await fetch(`${ctx.base}/channels/fast%3Aone/messages?direction=forwards`, {
      headers: { authorization: basic(ctx.gw.key) },
    })
  ).json()) as any[]
  expect(items.map((m) => m.name)).toEqual(['a', 'b'])
  expect(items[1]).toMatchObject({ data: '{"y":1}', encoding: 'json' })
})

test('native route errors are in the spec shape', async () => {
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

test('a request with a very short Host header is routed correctly', async () => {
  const url = new URL(ctx.base)
  const text = await new Promise<string>((resolve, reject) => {
    const s = connect(Number(url.port), url.hostname, () =>
      s.write('GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
    )
    let out = ''
    s.on('data', (d) => {
      out += d.toString()
    })
    s.on('end', () => resolve(out))
    s.on('error', reject)
  })
  expect(text.startsWith('HTTP/1.1 200')).toBe(true)
})
