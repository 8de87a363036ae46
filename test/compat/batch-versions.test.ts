/**
 * Batch publish answers by protocol version, driven with the official `ably` client (msgpack and
 * JSON): `rest.request()` states the version it is given in `X-Ably-Version`; `batchPublish()`
 * states the client's own (6 in ably-js 2.x).
 */
import { describe, expect, test } from 'bun:test'
import * as Ably from 'ably'
import { basic, useGateway } from '../helpers/gateway'

const ctx = useGateway()

let seq = 0
const fresh = (what: string) => `batchv:${what}-${++seq}-${Math.random().toString(36).slice(2, 8)}`

describe.each([
  { protocol: 'msgpack', useBinaryProtocol: true },
  { protocol: 'json', useBinaryProtocol: false },
])('ably-js over $protocol', ({ useBinaryProtocol }) => {
  const client = (opts: Ably.ClientOptions) =>
    new Ably.Rest({
      endpoint: '127.0.0.1',
      port: Number(new URL(ctx.base).port),
      tls: false,
      useBinaryProtocol,
      logLevel: 0,
      ...opts,
    })

  /** A token client that may publish to `allowed` channels only (the others fail inside the batch). */
  async function limitedClient(allowed: string[]) {
    const root = client({ key: ctx.gw.key })
    const token = await root.auth.requestToken({ capability: Object.fromEntries(allowed.map((c) => [c, ['publish']])) })
    return client({ tokenDetails: token })
  }

  test('version 2: one flat array over every spec of {channel, messageId} or {channel, error}', async () => {
    const [a, b, forbidden] = [fresh('a'), fresh('b'), fresh('forbidden')]
    const rest = await limitedClient([a, b])
    const res = await rest.request('post', '/messages', 2, null, [
      { channels: [a, forbidden], messages: [{ name: 'one', data: '1' }] },
      { channels: [b], messages: [{ name: 'two', data: '2' }] },
    ])
    expect(res.statusCode).toBe(201)
    expect(res.success).toBe(true)
    const items = res.items as any[]
    expect(items.map((i) => i.channel)).toEqual([a, forbidden, b])
    expect(Object.keys(items[0]).sort()).toEqual(['channel', 'messageId'])
    expect(Object.keys(items[2]).sort()).toEqual(['channel', 'messageId'])
    // 401 inside a batch entry, as the hosted service has it (a whole request refused stays 403)
    expect(items[1].error).toMatchObject({ code: 40160, statusCode: 401 })
    expect(typeof items[1].error.message).toBe('string')
    // the message ids carry the messageId as their prefix
    const stored = (await client({ key: ctx.gw.key }).channels.get(a).history()).items
    expect(stored.map((m) => m.id)).toEqual([`${items[0].messageId}:0`])
  })

  test('version 3: one BatchResult per spec', async () => {
    const [a, b] = [fresh('a'), fresh('b')]
    const rest = client({ key: ctx.gw.key })
    const res = await rest.request('post', '/messages', 3, null, [
      { channels: [a], messages: [{ data: 'x' }] },
      { channels: [b], messages: [{ data: 'y' }, { data: 'z' }] },
    ])
    expect(res.statusCode).toBe(201)
    const items = res.items as any[]
    expect(items.map((r) => [r.successCount, r.failureCount])).toEqual([
      [1, 0],
      [1, 0],
    ])
    expect(items[1].results[0]).toMatchObject({ channel: b, messageId: expect.any(String) })
    expect(items[1].results[0].serials).toHaveLength(2)
  })

  test("batchPublish() (the client's own version) reads BatchResults", async () => {
    const [a, forbidden] = [fresh('a'), fresh('forbidden')]
    const rest = await limitedClient([a])
    const result = await rest.batchPublish({ channels: [a, forbidden], messages: [{ data: 'x' }] })
    expect([result.successCount, result.failureCount]).toEqual([1, 1])
    expect(result.results.map((r) => r.channel)).toEqual([a, forbidden])
  })
})

test('a `v` query parameter states the version when no header does', async () => {
  const channel = fresh('query')
  const post = (path: string, headers: Record<string, string> = {}) =>
    fetch(`${ctx.base}${path}`, {
      method: 'POST',
      headers: { authorization: basic(ctx.gw.key), 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ channels: channel, messages: { data: 'q' } }),
    })
  const flat = (await (await post('/messages?v=2')).json()) as any[]
  expect(flat).toEqual([{ channel, messageId: expect.any(String) }])
  const modern = (await (await post('/messages?v=2', { 'x-ably-version': '4' })).json()) as any[]
  expect(modern[0]).toMatchObject({ successCount: 1, failureCount: 0 })
  // no version stated at all: the BatchResult form
  expect(((await (await post('/messages')).json()) as any[])[0]).toMatchObject({ successCount: 1 })
})
