import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { unpack } from 'msgpackr'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { expectError } from '../helpers/errors'

let gw: TestGateway
beforeAll(async () => {
  gw = await createTestGateway()
  await gw.request('/channels/fmt/messages', { method: 'POST', json: { name: 'n', data: '<b>x</b>' } })
})
afterAll(async () => {
  await gw.close()
})

describe('response formats', () => {
  test('format=msgpack and Accept: application/x-msgpack give msgpack', async () => {
    for (const r of [
      await gw.request('/channels/fmt/messages?format=msgpack'),
      await gw.request('/channels/fmt/messages', { headers: { accept: 'application/x-msgpack' } }),
    ]) {
      expect(r.headers.get('content-type')).toBe('application/x-msgpack')
      expect((unpack(new Uint8Array(await r.arrayBuffer())) as any[])[0].name).toBe('n')
    }
  })
  test('an explicit Accept type wins over format=', async () => {
    const r = await gw.request('/channels/fmt/messages?format=msgpack', { headers: { accept: 'application/json' } })
    expect(r.headers.get('content-type')).toBe('application/json')
  })
  test('JSONP wraps the body in the callback', async () => {
    const r = await gw.request('/channels/fmt/messages?format=jsonp&callback=handle_1')
    expect(r.headers.get('content-type')).toBe('application/javascript')
    const text = await r.text()
    expect(text.startsWith('handle_1([')).toBe(true)
    expect(JSON.parse(text.slice('handle_1('.length, -2))[0].name).toBe('n')
    const unsafe = await (await gw.request('/channels/fmt/messages?format=jsonp&callback=alert(1)')).text()
    expect(unsafe.startsWith('callback(')).toBe(true)
  })
  test('callback alone answers JSONP (no format=jsonp needed)', async () => {
    const r = await gw.request('/channels/fmt/messages?callback=cb')
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('application/javascript')
    const text = await r.text()
    expect(text.startsWith('cb([')).toBe(true)
    expect(JSON.parse(text.slice('cb('.length, -2))[0].name).toBe('n')
    // what a <script> tag sends: Accept */*, no credentials but a key in the query
    const time = await gw.request('/time?callback=clock', { key: null, headers: { accept: '*/*' } })
    expect(time.headers.get('content-type')).toBe('application/javascript')
    expect(await time.text()).toMatch(/^clock\(\[\d+\]\);$/)
  })
  test('with a callback, an explicit format= or Accept type still decides', async () => {
    const explicit = await gw.request('/channels/fmt/messages?callback=cb&format=json')
    expect(explicit.headers.get('content-type')).toBe('application/json')
    expect(((await explicit.json()) as any[])[0].name).toBe('n')
    const accepted = await gw.request('/channels/fmt/messages?callback=cb', { headers: { accept: 'application/json' } })
    expect(accepted.headers.get('content-type')).toBe('application/json')
    const packed = await gw.request('/channels/fmt/messages?callback=cb&format=msgpack')
    expect(packed.headers.get('content-type')).toBe('application/x-msgpack')
  })
  test('an error asked for with callback alone is still the JSON error shape', async () => {
    await expectError(await gw.request('/channels/fmt/messages?limit=0&callback=cb'), 400, 40003)
  })
  test('text/html renders escaped JSON', async () => {
    const r = await gw.request('/channels/fmt/messages', { headers: { accept: 'text/html' } })
    expect(r.headers.get('content-type')).toStartWith('text/html')
    const html = await r.text()
    expect(html).toContain('<pre>')
    expect(html).not.toContain('<b>x</b>')
    expect(html).toContain('&#60;b&#62;x&#60;/b&#62;')
  })
  test('errors are msgpack for msgpack clients with exact content type and headers', async () => {
    const r = await gw.request('/channels/fmt/messages?limit=0', { headers: { accept: 'application/x-msgpack' } })
    expect(r.status).toBe(400)
    expect(r.headers.get('content-type')).toBe('application/x-msgpack')
    expect(r.headers.get('x-ably-errorcode')).toBe('40003')
    expect((unpack(new Uint8Array(await r.arrayBuffer())) as any).error.code).toBe(40003)
  })
  test('errors for JSONP and HTML callers are plain JSON', async () => {
    const r = await gw.request('/channels/fmt/messages?limit=0&format=jsonp')
    expect(r.headers.get('content-type')).toBe('application/json')
    expect(((await r.json()) as any).error.code).toBe(40003)
  })
  test('unknown query parameters (rnd) are ignored and never echoed with credentials into links', async () => {
    const r = await gw.request(`/channels/fmt/messages?rnd=123&key=${encodeURIComponent(gw.key)}`, { key: null })
    expect(r.status).toBe(200)
    expect(r.headers.get('link')).not.toContain('key=')
    expect(r.headers.get('link')).not.toContain('rnd=')
  })
})

describe('CORS', () => {
  test('preflight allows the client headers and echoes the origin', async () => {
    const r = await gw.request('/channels/fmt/messages', {
      method: 'OPTIONS',
      key: null,
      headers: { origin: 'https://app.example', 'access-control-request-headers': 'authorization,x-ably-version' },
    })
    expect(r.status).toBe(204)
    expect(r.headers.get('access-control-allow-origin')).toBe('https://app.example')
    expect(r.headers.get('access-control-allow-credentials')).toBe('true')
    expect(r.headers.get('access-control-allow-headers')).toContain('x-ably-version')
  })
  test('responses and errors expose Link and X-Ably-Error* headers', async () => {
    const ok = await gw.request('/channels/fmt/messages', { headers: { origin: 'https://app.example' } })
    expect(ok.headers.get('access-control-expose-headers')).toContain('link')
    const err = await gw.request('/channels/fmt/messages', { key: null, headers: { origin: 'https://app.example' } })
    expect(err.status).toBe(401)
    expect(err.headers.get('access-control-allow-origin')).toBe('https://app.example')
    expect(err.headers.get('access-control-expose-headers')).toContain('x-ably-errorcode')
  })
})

test('unknown routes are 404 / 40400 in the error shape', async () => {
  const r = await gw.request('/no/such/route')
  expect(r.status).toBe(404)
  expect(((await r.json()) as any).error).toMatchObject({ code: 40400, statusCode: 404 })
})
