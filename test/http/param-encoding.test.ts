/**
 * One decoding rule for every route (issue 26, finding 7): a channel name (or any path or query
 * parameter) whose percent-encoding is malformed or not UTF-8 is refused with the same 400 on
 * every route, over real sockets (Bun's router serves the publish, Elysia the rest) and
 * in-process alike; before, a publish stored `\uFFFDy` while the history of the same URL was 400.
 */
import { describe, expect, test } from 'bun:test'
import { ROOT_KEY, basic, useGateway } from '../helpers/gateway'
import { RawConnection, type RawResponse } from '../helpers/raw-http'

const ctx = useGateway()

/** One request over its own socket, sent byte for byte as written (no client library re-encodes it). */
async function raw(method: string, path: string, body?: string): Promise<RawResponse> {
  const c = await RawConnection.open(ctx.base)
  const head =
    `${method} ${path} HTTP/1.1\r\nHost: ctx.gw.test\r\nAuthorization: ${basic(ROOT_KEY)}\r\nConnection: close\r\n` +
    (body === undefined
      ? '\r\n'
      : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`)
  c.write(head + (body ?? ''))
  await c.until((t) => c.response() !== undefined && t.length > 0, 10_000)
  const res = c.response()
  c.close()
  if (!res) throw new Error(`no answer to ${method} ${path}`)
  return res
}

function expectRefused(res: RawResponse, code: number, what: string) {
  expect(`${res.status} ${res.body}`).toStartWith('400 ')
  expect(res.headers['content-type']).toBe('application/json')
  expect(res.headers['x-ably-errorcode']).toBe(String(code))
  const error = JSON.parse(res.body).error
  expect(error).toMatchObject({ code, statusCode: 400 })
  expect(error.message).toContain(what)
}

/** Not UTF-8: a surrogate, a truncated sequence, an overlong `/`, a malformed escape. */
const BAD = ['%ED%A0%80y', '%E0y', '%C0%AF', '%ZZy']

const MESSAGE = JSON.stringify({ name: 'n', data: 'd', text: 't' })

/** Routes naming a channel (or a chat room, which is one) in the path or the query: 40010. */
const CHANNEL_ROUTES: Array<[string, (x: string) => string, string?]> = [
  ['POST', (x) => `/channels/${x}/messages`, MESSAGE],
  ['GET', (x) => `/channels/${x}/messages`],
  ['GET', (x) => `/channels/${x}`],
  ['GET', (x) => `/channels/${x}/presence`],
  ['GET', (x) => `/channels/${x}/presence/history`],
  ['GET', (x) => `/channels/${x}/messages/01700000000000-000000`],
  ['GET', (x) => `/sse?v=1.2&channels=${x}`],
  ['GET', (x) => `/event-stream?v=1.2&channels=ok,${x}`],
  ['GET', (x) => `/chat/v4/rooms/${x}/messages`],
  ['POST', (x) => `/chat/v4/rooms/${x}/messages`, MESSAGE],
]

describe('a channel name that is not percent-encoded UTF-8', () => {
  test.each(BAD)('%s: 400 / 40010 on every route that names a channel', async (bad) => {
    for (const [method, path, body] of CHANNEL_ROUTES) {
      const res = await raw(method, path(bad), body)
      expect(`${method} ${path(bad)}: ${res.status}`).toBe(`${method} ${path(bad)}: 400`)
      expectRefused(res, 40010, 'not valid percent-encoded UTF-8')
    }
  })

  test('nothing is stored under a name with U+FFFD put in', async () => {
    for (const bad of BAD) await raw('POST', `/channels/${bad}/messages`, MESSAGE)
    for (const stored of ['%EF%BF%BDy', '%EF%BF%BD', '%EF%BF%BD%EF%BF%BD']) {
      const res = await raw('GET', `/channels/${stored}/messages`)
      expect(res.status).toBe(200)
      expect(JSON.parse(res.body)).toEqual([])
    }
  })

  test('in-process (app.handle, the Elysia publish route) the same 400', async () => {
    for (const bad of BAD) {
      const r = await ctx.gw.request(`/channels/${bad}/messages`, { method: 'POST', json: { name: 'n', data: 'd' } })
      expect(r.status).toBe(400)
      expect(((await r.json()) as any).error.code).toBe(40010)
    }
  })

  test('any other path parameter: 400 / 40003 naming it', async () => {
    expectRefused(await raw('GET', '/liveobjects/%ED%A0%80y/objects'), 40003, 'namespace')
    expectRefused(await raw('POST', '/keys/%E0y/requestToken', '{}'), 40003, 'keyName')
    expectRefused(await raw('GET', '/v1/apps/%ZZ/keys'), 40003, 'appId')
  })

  test('a query value: 400 / 40003 naming it, on the publish route too', async () => {
    expectRefused(await raw('GET', '/channels/ok/messages?limit=%ZZ'), 40003, 'limit')
    expectRefused(await raw('POST', '/channels/ok/messages?format=%ED%A0%80', MESSAGE), 40003, 'format')
  })

  test('a lone surrogate in a JSON body is not a channel name either (batch publish: that channel fails)', async () => {
    const res = await raw('POST', '/messages', '{"channels":["\\ud800y","ok"],"messages":{"name":"n","data":"d"}}')
    const [result] = JSON.parse(res.body)
    expect(result.failureCount).toBe(1)
    expect(JSON.stringify(result.results)).toContain('40010')
  })
})

describe('names that are percent-encoded UTF-8 are served as before', () => {
  test('publish and history of `€/x y` through escapes', async () => {
    const path = '/channels/%E2%82%AC%2Fx%20y/messages'
    expect((await raw('POST', path, MESSAGE)).status).toBe(201)
    const res = await raw('GET', path)
    expect(res.status).toBe(200)
    expect(JSON.parse(res.body)).toHaveLength(1)
    const r = await ctx.gw.request(`/channels/${encodeURIComponent('€/x y')}/messages`)
    expect(((await r.json()) as unknown[]).length).toBe(1)
  })
})
