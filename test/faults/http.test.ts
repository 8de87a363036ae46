/**
 * Fault sessions on HTTP (issue 45): `http_request` rules (method, pathContains, count) and every
 * HTTP action, with the official REST client through a session's port; comet and the event
 * stream served there too.
 */
import { describe, expect, test } from 'bun:test'
import * as Ably from 'ably'
import { useFaultSessions } from '../helpers/faults'
import { ablyError } from '../helpers/ably'
import { authCallbackOf, connectedClient, fresh, realtimeGateway } from '../helpers/realtime'

const rt = realtimeGateway({ faults: true, faultsPort: 0 })
const session = useFaultSessions(() => rt.gw.faultsUrl!)

const restThrough = (port: number, o: Partial<Ably.ClientOptions> = {}) =>
  new Ably.Rest({
    key: rt.gw.key,
    endpoint: '127.0.0.1',
    port,
    tls: false,
    useBinaryProtocol: false,
    logLevel: 0,
    ...o,
  })

describe('fault sessions: http_request rules', () => {
  test('http_respond 401 / 40142 once: the client renews its token and the publish goes through', async () => {
    const s = await session({
      rules: [
        {
          match: { type: 'http_request', method: 'post', pathContains: '/channels/' },
          action: {
            type: 'http_respond',
            status: 401,
            body: { error: { code: 40142, statusCode: 401, message: 'Token expired' } },
          },
          times: 1,
          comment: 'expire',
        },
      ],
    })
    const { authCallback, calls } = authCallbackOf(() => rt.rest().auth.requestToken())
    const rest = restThrough(s.port, { key: undefined, authCallback })
    const name = fresh('renew')
    await rest.channels.get(name).publish('m', 'after renewal')
    expect(calls.length).toBeGreaterThanOrEqual(2)
    const log = await s.log()
    const responses = log.filter((e) => e.type === 'http_response')
    expect(responses.map((e) => [e.status, e.ruleMatched])).toEqual([
      [401, 'expire'],
      [201, null],
    ])
    const requests = log.filter((e) => e.type === 'http_request')
    expect(requests[0]).toMatchObject({ method: 'POST', path: `/channels/${name}/messages` })
    expect(requests[0]!.headers!['X-Ably-Version']).toBeDefined()
    expect((await rt.rest().channels.get(name).history()).items.map((m) => m.data)).toEqual(['after renewal'])
  })

  test('http_respond with headers and a body the client reads: the error surfaces as given', async () => {
    const s = await session({
      rules: [
        {
          match: { type: 'http_request', pathContains: '/time' },
          action: {
            type: 'http_respond',
            status: 503,
            body: { error: { code: 50300, statusCode: 503, message: 'Unavailable now' } },
            headers: { 'x-extra': 'yes' },
          },
          times: 1,
        },
      ],
    })
    const err = await ablyError(restThrough(s.port).time())
    expect([err.code, err.statusCode]).toEqual([50300, 503])
    const r = await fetch(`http://127.0.0.1:${s.port}/time`)
    expect(r.status).toBe(200)
  })

  test('http_drop: the connection is cut without an answer, the client retries on its fallback host', async () => {
    const s = await session({
      rules: [{ match: { type: 'http_request', pathContains: '/time' }, action: { type: 'http_drop' }, times: 1 }],
    })
    const raw = await fetch(`http://127.0.0.1:${s.port}/time`).then(
      () => 'answered',
      () => 'cut',
    )
    expect(raw).toBe('cut')
    await s.addRules([
      { match: { type: 'http_request', pathContains: '/time' }, action: { type: 'http_drop' }, times: 1 },
    ])
    const t = await restThrough(s.port, { fallbackHosts: ['localhost'] }).time()
    expect(t).toBeGreaterThan(0)
    const log = await s.log()
    expect(log.filter((e) => e.type === 'http_request' && e.path === '/time')).toHaveLength(3)
    expect(log.filter((e) => e.type === 'http_response').map((e) => e.status)).toEqual([0, 0, 200])
  })

  test('http_delay past the client timeout: it retries on its fallback host; the held request is dropped with the session', async () => {
    const s = await session({
      rules: [
        {
          match: { type: 'http_request', pathContains: '/time' },
          action: { type: 'http_delay', delayMs: 60_000 },
          times: 1,
        },
      ],
    })
    const t = await restThrough(s.port, { fallbackHosts: ['localhost'], httpRequestTimeout: 1000 }).time()
    expect(t).toBeGreaterThan(0)
    expect((await s.log()).filter((e) => e.type === 'http_request').length).toBe(2)
  })

  test('http_replace_response: the publish reaches the gateway, the client sees a 503 and its idempotent retry is stored once', async () => {
    const s = await session({
      rules: [
        {
          match: { type: 'http_request', method: 'POST', pathContains: '/messages' },
          action: {
            type: 'http_replace_response',
            status: 503,
            body: { error: { code: 50300, statusCode: 503, message: 'lost answer' } },
          },
          times: 1,
        },
      ],
    })
    const name = fresh('idem')
    await restThrough(s.port, { fallbackHosts: ['localhost'], idempotentRestPublishing: true })
      .channels.get(name)
      .publish('m', 'once')
    expect((await rt.rest().channels.get(name).history()).items.map((m) => m.data)).toEqual(['once'])
    expect((await s.log()).filter((e) => e.type === 'http_response').map((e) => e.status)).toEqual([503, 201])
  })

  test('count: only the Nth matching request is answered by the rule', async () => {
    const s = await session({
      rules: [
        {
          match: { type: 'http_request', method: 'GET', pathContains: '/time', count: 2 },
          action: { type: 'http_respond', status: 500 },
        },
      ],
    })
    const statuses = []
    for (let i = 0; i < 3; i++) statuses.push((await fetch(`http://127.0.0.1:${s.port}/time`)).status)
    expect(statuses).toEqual([200, 500, 200])
  })

  test('comet and the event stream are served on a session port, their requests logged and matched', async () => {
    const s = await session({
      rules: [
        {
          match: { type: 'http_request', pathContains: '/sse' },
          action: {
            type: 'http_respond',
            status: 401,
            body: { error: { code: 40142, statusCode: 401, message: 'x' } },
          },
          times: 1,
        },
      ],
    })
    const name = fresh('comet')
    const client = await connectedClient(s.port, { key: rt.gw.key, transports: ['comet'] }, false)
    await client.channels.get(name).publish('via', 'comet')
    const url = `http://127.0.0.1:${s.port}/sse?v=1.2&channels=${name}&rewind=1&key=${encodeURIComponent(rt.gw.key)}`
    expect((await fetch(url)).status).toBe(401)
    const stream = await fetch(url)
    expect(stream.status).toBe(200)
    const reader = stream.body!.getReader()
    let text = ''
    while (!text.includes('comet')) text += new TextDecoder().decode((await reader.read()).value)
    await reader.cancel()
    const log = await s.log()
    expect(log.some((e) => e.type === 'http_request' && e.path!.startsWith('/comet/'))).toBe(true)
    expect(log.filter((e) => e.type === 'http_request' && e.path === '/sse')).toHaveLength(2)
  })
})
