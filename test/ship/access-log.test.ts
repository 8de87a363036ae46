import { afterAll, expect, test } from 'bun:test'
import { basic } from '../helpers/gateway'
import { GatewayNode } from '../helpers/node-process'
import { openSse } from '../helpers/sse'

let node: GatewayNode | undefined
afterAll(async () => {
  await node?.stop()
})

test('at the default level every request gets one JSON access line, with no secret in it', async () => {
  const secret = 'AccessLogSecret-0123456789'
  const key = `logapp.logkey:${secret}`
  const mgmt = 'mgmt-token-ACCESS-77'
  node = await GatewayNode.start({ LOG_LEVEL: 'info', BOOTSTRAP_KEY: key, BOOTSTRAP_ACCESS_TOKEN: mgmt })
  const url = node.url
  const before = node.log.length
  const json = { authorization: basic(key), 'content-type': 'application/json' }
  const sent: Array<{ method: string; route: string; status: number; requestId?: string }> = []
  const call = async (path: string, init: RequestInit, route: string, requestId?: string) => {
    const headers = new Headers(init.headers)
    if (requestId) headers.set('x-request-id', requestId)
    const r = await fetch(url + path, { ...init, headers })
    await r.arrayBuffer()
    sent.push({ method: init.method ?? 'GET', route, status: r.status, requestId })
    return r
  }
  // publishes (header and query credentials), failures, management, unmatched
  await call(
    '/channels/c/messages',
    { method: 'POST', headers: json, body: '{"data":"x"}' },
    '/channels/:channel/messages',
    'fast-1',
  )
  await call(`/channels/c/messages?key=${encodeURIComponent(key)}`, {}, '/channels/:channel/messages', 'query-1')
  await call(`/channels/c/messages?accessToken=${secret}`, {}, '/channels/:channel/messages')
  await call(
    '/channels/c/messages',
    { method: 'POST', headers: { ...json, authorization: basic(`logapp.logkey:x${secret}`) }, body: '{}' },
    '/channels/:channel/messages',
  )
  await call('/v1/me', { headers: { authorization: `Bearer ${mgmt}` } }, '/v1/me', 'mgmt-1')
  await call('/nothing/here', {}, 'unmatched', 'weird "id"')
  const sse = await openSse(`${url}/sse?v=1.2&channels=c&key=${encodeURIComponent(key)}`)
  sse.close()
  sent.push({ method: 'GET', route: '/sse', status: 200 })
  await Bun.sleep(100) // lines are written once per event-loop turn
  await node.kill('SIGTERM')

  const lines = node.log
    .slice(before)
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l))
  const access = lines.filter((l) => l.msg === 'request' && l.route !== '/ready')
  expect(access).toHaveLength(sent.length)
  for (const [i, want] of sent.entries()) {
    const got = access[i]
    expect(got).toMatchObject({ level: 'info', method: want.method, route: want.route, status: want.status })
    expect(typeof got.ms).toBe('number')
    expect(got.client).toBe('127.0.0.1')
    expect(typeof got.requestId).toBe('string')
    expect(Date.parse(got.time)).toBeGreaterThan(0)
    if (want.requestId === 'weird "id"')
      expect(got.requestId).not.toBe(want.requestId) // not a plain token: replaced
    else if (want.requestId) expect(got.requestId).toBe(want.requestId)
  }
  const [fast, query, , refused, me] = access
  expect(fast).toMatchObject({ status: 201, app: 'logapp' })
  expect(fast.bytes).toBeGreaterThan(10)
  expect(query).toMatchObject({ status: 200, app: 'logapp' })
  expect(refused.status).toBe(401)
  expect(refused.app).toBeUndefined()
  expect(me.account).toBeString()
  expect(access.at(-1)).toMatchObject({ route: '/sse', app: 'logapp' })
  // nothing of a credential: no secret, no query string, no header
  for (const needle of [secret, 'key=', 'accessToken=', mgmt, Buffer.from(key).toString('base64')])
    expect(node.log.includes(needle)).toBe(false)
}, 20_000)
