import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { APP_ID, createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { messages, openSse, type SseClient } from '../helpers/sse'
import { makeJwt } from '../helpers/tokens'

let gw: TestGateway
let base: string
const open: SseClient[] = []
beforeAll(async () => {
  gw = await createTestGateway({ sseKeepaliveMs: 200 })
  base = listen(gw)
  await gw.backend.control.createKey({
    appId: APP_ID,
    id: 'sub',
    name: 'sub',
    secret: 'sub-secret',
    capability: { 'ok:*': ['subscribe'] },
    status: 0,
    revocableTokens: false,
    created: 0,
    modified: 0,
  })
})
afterAll(async () => {
  for (const c of open) c.close()
  await gw.close()
})

const key = () => encodeURIComponent(gw.key)
const sse = async (qs: string, headers: Record<string, string> = {}) => {
  const c = await openSse(`${base}/sse?${qs}`, headers)
  open.push(c)
  return c
}
const publish = async (channel: string, body: unknown) => {
  const r = await gw.request(`/channels/${encodeURIComponent(channel)}/messages`, { method: 'POST', json: body })
  expect(r.status).toBe(201)
  return ((await r.json()) as any).serials as string[]
}
/** Waits until the hub has registered `n` subscribers on `channel`, so a publish is not missed by design. */
const subscribed = async (channel: string, n = 1) => {
  for (let i = 0; i < 200 && gw.core.hub.count(APP_ID, channel) < n; i++) await Bun.sleep(5)
  expect(gw.core.hub.count(APP_ID, channel)).toBeGreaterThanOrEqual(n)
}

describe('opening a stream', () => {
  test.each([
    ['v missing', 'channels=a', 400, 40003],
    ['v unsupported', 'v=9.9&channels=a', 400, 40003],
    ['channels missing', 'v=1.2', 400, 40003],
    ['rewind over 100', 'v=1.2&channels=a&rewind=101', 400, 40003],
    ['enveloped not boolean', 'v=1.2&channels=a&enveloped=maybe', 400, 40003],
    ['lastEvent malformed', 'v=1.2&channels=a&lastEvent=nonsense', 400, 40003],
    ['invalid channel', 'v=1.2&channels=%5Bmeta%5Dx', 400, 40010],
  ])('%s is an HTTP error in the spec shape', async (_why, qs, status, code) => {
    const c = await sse(`${qs}&key=${key()}`)
    expect(c.status).toBe(status)
    expect(c.response.headers.get('content-type')).toBe('application/json')
    expect(((await c.response.json()) as any).error).toMatchObject({ code, statusCode: status })
  })
  test('no credentials is 401; a channel without subscribe is 403 / 40160', async () => {
    const anon = await sse('v=1.2&channels=a')
    expect(anon.status).toBe(401)
    const denied = await sse(`v=1.2&channels=ok:1,other&key=${encodeURIComponent('testapp.sub:sub-secret')}`)
    expect(denied.status).toBe(403)
    expect(((await denied.response.json()) as any).error.code).toBe(40160)
  })
  test('too many channels is 400', async () => {
    const names = Array.from({ length: gw.config.sseMaxChannels + 1 }, (_, i) => `c${i}`).join(',')
    expect((await sse(`v=1.2&channels=${names}&key=${key()}`)).status).toBe(400)
  })
  test('a stream answers text/event-stream and authenticates by key, accessToken or header', async () => {
    const byKey = await sse(`v=1.2&channels=auth1&key=${key()}`)
    expect(byKey.status).toBe(200)
    expect(byKey.response.headers.get('content-type')).toBe('text/event-stream')
    const token = (
      (await (await gw.request('/keys/testapp.rootkey/requestToken', { method: 'POST', json: {} })).json()) as any
    ).token
    expect((await sse(`v=1.2&channels=auth1&accessToken=${encodeURIComponent(token)}`)).status).toBe(200)
    expect(
      (await sse('v=1.2&channels=auth1', { authorization: `Bearer ${Buffer.from(token).toString('base64')}` })).status,
    ).toBe(200)
  })
})

describe('delivery', () => {
  test('enveloped messages arrive in publish order with id, name, timestamp, channel, data', async () => {
    const c = await sse(`v=1.2&channels=d1&key=${key()}`)
    await subscribed('d1')
    for (let i = 0; i < 20; i++) await publish('d1', { name: `n${i}`, data: `p${i}`, clientId: 'cli' })
    await c.until((e) => messages(e).length === 20)
    const got = messages(c.events).map((e) => JSON.parse(e.data))
    expect(got.map((m) => m.name)).toEqual(Array.from({ length: 20 }, (_, i) => `n${i}`))
    expect(got[0]).toMatchObject({ channel: 'd1', data: 'p0', clientId: 'cli' })
    expect(typeof got[0].id).toBe('string')
    expect(typeof got[0].timestamp).toBe('number')
    expect(messages(c.events).every((e) => e.id)).toBe(true)
  })
  test('enveloped=false sends the raw payload; newlines become several data lines', async () => {
    const c = await sse(`v=1.2&channels=raw&enveloped=false&key=${key()}`)
    await subscribed('raw')
    await publish('raw', { data: 'plain text' })
    await publish('raw', { data: { obj: true } })
    await publish('raw', { data: 'line1\nline2' })
    await c.until((e) => messages(e).length === 3)
    expect(messages(c.events).map((e) => e.data)).toEqual(['plain text', '{"obj":true}', 'line1\nline2'])
    expect(c.text).toContain('data: line1\ndata: line2\n')
  })
  test('several channels on one stream, with a custom separator for names holding commas', async () => {
    const c = await sse(
      `v=1.2&channels=${encodeURIComponent('m,1|m2')}&separator=${encodeURIComponent('|')}&key=${key()}`,
    )
    await subscribed('m,1')
    await subscribed('m2')
    await publish('m,1', { data: 'a' })
    await publish('m2', { data: 'b' })
    await publish('m,1', { data: 'c' })
    await c.until((e) => messages(e).length === 3)
    const got = messages(c.events).map((e) => JSON.parse(e.data))
    expect(got.map((m) => `${m.channel}=${m.data}`).sort()).toEqual(['m,1=a', 'm,1=c', 'm2=b'])
    expect(got.filter((m) => m.channel === 'm,1').map((m) => m.data)).toEqual(['a', 'c'])
  })
  test('rewind delivers the last N messages first', async () => {
    for (let i = 0; i < 5; i++) await publish('rw', { data: `old${i}` })
    const c = await sse(`v=1.2&channels=rw&rewind=2&key=${key()}`)
    await c.until((e) => messages(e).length === 2)
    await publish('rw', { data: 'new' })
    await c.until((e) => messages(e).length === 3)
    expect(messages(c.events).map((e) => JSON.parse(e.data).data)).toEqual(['old3', 'old4', 'new'])
  })
  test('keepalives are newlines; heartbeats=true sends heartbeat events', async () => {
    const quiet = await sse(`v=1.2&channels=ka&key=${key()}`)
    const beats = await sse(`v=1.2&channels=ka&heartbeats=true&key=${key()}`)
    await beats.until((e) => e.filter((x) => x.event === 'heartbeat').length >= 2)
    await Bun.sleep(50)
    expect(quiet.text.length).toBeGreaterThan(0)
    expect(quiet.text.trim()).toBe('')
    expect(quiet.events).toHaveLength(0)
  })
  test('/event-stream without text/event-stream gives one JSON envelope per line', async () => {
    const c = await openSse(`${base}/event-stream?v=1.2&channels=nd&key=${key()}`)
    open.push(c)
    expect(c.response.headers.get('content-type')).toBe('application/x-ndjson')
    await subscribed('nd')
    await publish('nd', { name: 'x', data: 'y' })
    await c.until(() => c.text.includes('"event":"message"'))
    const line = c.text.split('\n').find((l) => l.includes('"message"'))!
    const env = JSON.parse(line)
    expect(env).toMatchObject({ event: 'message', data: { name: 'x', data: 'y', channel: 'nd' } })
    expect(typeof env.id).toBe('string')
    const asSse = await openSse(`${base}/event-stream?v=1.2&channels=nd&key=${key()}`, { accept: 'text/event-stream' })
    open.push(asSse)
    expect(asSse.response.headers.get('content-type')).toBe('text/event-stream')
  })
  test('occupancy counts live stream connections', async () => {
    const c = await sse(`v=1.2&channels=occ&key=${key()}`)
    await subscribed('occ')
    const details = async () => ((await (await gw.request('/channels/occ')).json()) as any).status.occupancy.metrics
    expect((await details()).connections).toBe(1)
    c.close()
    for (let i = 0; i < 100 && gw.core.hub.count(APP_ID, 'occ') > 0; i++) await Bun.sleep(10)
    expect((await details()).connections).toBe(0)
  })
})

describe('server-side endings', () => {
  test('an expiring token gets an error event 40142 / 401 and the stream closes', async () => {
    const token = (
      (await (
        await gw.request('/keys/testapp.rootkey/requestToken', { method: 'POST', json: { ttl: 1000 } })
      ).json()) as any
    ).token
    const c = await sse(`v=1.2&channels=exp&accessToken=${encodeURIComponent(token)}`)
    await c.until((e) => e.some((x) => x.event === 'error'), 5000)
    await c.ended
    const err = JSON.parse(c.events.find((x) => x.event === 'error')!.data)
    expect(err).toMatchObject({ code: 40142, statusCode: 401 })
    expect(typeof err.message).toBe('string')
  })
  test('a JWT valid for 30 days (past the longest timer of the runtime): the stream stays open and delivers', async () => {
    const now = Math.floor(Date.now() / 1000)
    const [keyName, secret] = gw.key.split(':') as [string, string]
    const jwt = makeJwt(keyName, secret, { iat: now, exp: now + 30 * 86_400, 'x-ably-capability': '{"*":["*"]}' })
    const c = await sse(`v=1.2&channels=long-token&accessToken=${encodeURIComponent(jwt)}`)
    await subscribed('long-token')
    // before the fix its expiry timer fired at once: error 40142, stream ended
    await Bun.sleep(500)
    await publish('long-token', { data: 'still open' })
    await c.until((e) => messages(e).length === 1)
    expect(c.events.filter((x) => x.event === 'error')).toEqual([])
  })
})

test('stats count messages delivered to event streams and token requests', async () => {
  const c = await sse(`v=1.2&channels=stat-out&key=${key()}`)
  await subscribed('stat-out')
  for (let i = 0; i < 4; i++) await publish('stat-out', { data: `s${i}` })
  await c.until((e) => messages(e).length === 4)
  expect((await gw.request('/keys/testapp.rootkey/requestToken', { method: 'POST', json: {} })).status).toBe(200)
  const rows = (await (await gw.request('/stats?unit=hour&limit=1')).json()) as any[]
  expect(rows[0].entries['messages.outbound.realtime.messages.count']).toBeGreaterThanOrEqual(4)
  expect(rows[0].entries['apiRequests.tokenRequests.succeeded']).toBeGreaterThanOrEqual(1)
  expect(rows[0].entries['apiRequests.other.succeeded']).toBeGreaterThanOrEqual(4)
  expect(rows[0].entries['connections.all.opened']).toBeGreaterThanOrEqual(1)
  expect(rows[0].entries['connections.all.peak']).toBeGreaterThanOrEqual(1)
  // the hour's peak counts the connections still open from the hour before (a run across an hour
  // boundary: peak 13, opened 2), so it is bounded by every connection opened, not by this hour's
  const hours = (await (await gw.request('/stats?unit=hour')).json()) as any[]
  const openedEver = hours.reduce((n, r) => n + (r.entries['connections.all.opened'] ?? 0), 0)
  expect(rows[0].entries['connections.all.peak']).toBeLessThanOrEqual(openedEver)
  expect(rows[0].entries['messages.all.messages.count']).toBeGreaterThanOrEqual(
    rows[0].entries['messages.inbound.rest.messages.count'] + 4,
  )
})

test('revoking the key ends the streams opened with it (error 40131)', async () => {
  const control = gw.backend.control
  await control.createKey({
    appId: APP_ID,
    id: 'revokeme',
    name: 'r',
    secret: 'revoke-secret',
    capability: { '*': ['*'] },
    status: 0,
    revocableTokens: false,
    created: 0,
    modified: 0,
  })
  const c = await sse(`v=1.2&channels=rv&key=${encodeURIComponent('testapp.revokeme:revoke-secret')}`)
  expect(c.status).toBe(200)
  const other = await sse(`v=1.2&channels=rv&key=${key()}`)
  await subscribed('rv', 2)
  const k = (await control.getKey('testapp.revokeme'))!
  await control.createKey({ ...k, status: 1 })
  await c.until((e) => e.some((x) => x.event === 'error'), 5000)
  await c.ended
  expect(JSON.parse(c.events.find((x) => x.event === 'error')!.data)).toMatchObject({ code: 40131, statusCode: 401 })
  // streams of other keys carry on
  await publish('rv', { data: 'still here' })
  await other.until((e) => messages(e).length === 1)
})
