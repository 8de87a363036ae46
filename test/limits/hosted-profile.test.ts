/**
 * LIMITS_PROFILE=hosted (issue 45): the hosted service's documented limits (Standard package), one
 * by one with the official client, each refused with the code and status the hosted service
 * answers; an explicit setting wins over its profile; docs/limits.md lists every value.
 */
import { describe, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import * as Ably from 'ably'
import { loadConfig, SETTINGS } from '../../src/config'
import { LIMITS_PROFILES } from '../../src/config/limits-profiles'
import { ablyError } from '../helpers/ably'
import { connectedClient, fresh, realtimeGateway } from '../helpers/realtime'

const rt = realtimeGateway({ limitsProfile: 'hosted', rateLimits: true })

describe('LIMITS_PROFILE=hosted', () => {
  test('the connection is told the hosted limits (maxMessageSize 64 KiB, maxInboundRate 50, connectionStateTtl 2 min)', async () => {
    const client = await connectedClient(rt.port, { key: rt.gw.key })
    const details = (
      client.connection as unknown as { connectionManager: { connectionDetails: Record<string, number> } }
    ).connectionManager.connectionDetails
    expect([details.maxMessageSize, details.maxInboundRate, details.connectionStateTtl]).toEqual([65536, 50, 120000])
  })

  test('message size: over 64 KiB is 413 / 40009 from the server (the client refuses it first, 40009)', async () => {
    const err = await ablyError(rt.rest().channels.get(fresh('big')).publish('m', 'x'.repeat(65537)))
    expect(err.code).toBe(40009)
    const r = await fetch(`${rt.base}/channels/${fresh('big')}/messages`, {
      method: 'POST',
      headers: { authorization: 'Basic ' + btoa(rt.gw.key), 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'm', data: 'x'.repeat(65537) }),
    })
    expect([r.status, ((await r.json()) as { error: { code: number } }).error.code]).toEqual([413, 40009])
    await rt.rest().channels.get(fresh('fits')).publish('m', 'x'.repeat(65000))
  })

  test('inbound message rate per connection: past 50 a second, NACK 42911 / 429, the connection stays', async () => {
    const client = await connectedClient(rt.port, { key: rt.gw.key })
    const ch = client.channels.get(fresh('rate'))
    await ch.attach()
    const outcomes = await Promise.all(
      Array.from({ length: 150 }, (_, i) =>
        ch.publish('m', String(i)).then(
          () => 'ok',
          (e: Ably.ErrorInfo) => `${e.statusCode}/${e.code}`,
        ),
      ),
    )
    const refused = outcomes.filter((o) => o !== 'ok')
    expect(refused.length).toBeGreaterThan(0)
    // the connection's bound refuses; the channel's (also 50 a second, its bucket started up to a
    // clock tick after the connection's, so a fraction of a token behind) may refuse one at the edge
    for (const r of refused) expect(['429/42911', '429/42913']).toContain(r)
    expect(refused.filter((r) => r === '429/42911').length).toBeGreaterThanOrEqual(refused.length - 3)
    expect(outcomes.filter((o) => o === 'ok').length).toBeGreaterThanOrEqual(50)
    expect(client.connection.state).toBe('connected')
  })

  test('channels per connection: the 201st attach fails, the connection stays', async () => {
    const client = await connectedClient(rt.port, { key: rt.gw.key })
    const prefix = fresh('many')
    await Promise.all(Array.from({ length: 200 }, (_, i) => client.channels.get(`${prefix}-${i}`).attach()))
    const err = await ablyError(client.channels.get(`${prefix}-200`).attach())
    expect([err.statusCode, err.code]).toEqual([400, 90010])
    expect(client.connection.state).toBe('connected')
  })

  test('presence members per channel: the 201st enter is 91003', async () => {
    const client = await connectedClient(rt.port, { key: rt.gw.key })
    const ch = client.channels.get(fresh('crowd'))
    await ch.attach()
    await Promise.all(Array.from({ length: 200 }, (_, i) => ch.presence.enterClient(`member-${i}`)))
    const err = await ablyError(ch.presence.enterClient('member-200'))
    expect(err.code).toBe(91003)
  })

  test('token TTL: at most 24 hours (40003 beyond), an hour when the request names none', async () => {
    const rest = rt.rest()
    const day = 24 * 3600_000
    const err = await ablyError(rest.auth.requestToken({ ttl: day + 1000 }))
    expect([err.statusCode, err.code]).toEqual([400, 40003])
    const t = await rest.auth.requestToken({ ttl: day })
    expect(t.expires - t.issued).toBe(day)
    const d = await rest.auth.requestToken()
    expect(d.expires - d.issued).toBe(3600_000)
  })

  test('messages per account per second: 2,500 (a third batch of 1,000 at once is 429 / 42910)', async () => {
    const rest = rt.rest()
    // 20 channels x 50 messages: within each channel's own 50 a second
    const messages = Array.from({ length: 50 }, (_, i) => ({ name: 'b', data: String(i) }))
    const spec = () => ({ channels: Array.from({ length: 20 }, () => fresh('account')), messages })
    // sent together, so that the bucket has no time to refill between them on a slow machine
    const outcomes = await Promise.all(
      [0, 1, 2].map(() =>
        rest.batchPublish(spec()).then(
          (r) => (r.successCount === 20 ? 'ok' : `partly: ${JSON.stringify(r)}`),
          (e: Ably.ErrorInfo) => `${e.statusCode}/${e.code}`,
        ),
      ),
    )
    expect(outcomes.sort()).toEqual(['429/42910', 'ok', 'ok'])
  })

  test('publish rate per channel: 50 a second from all publishers together, 429 / 42913 beyond (REST and realtime); other channels unaffected', async () => {
    const name = fresh('channel-rate')
    const outcome = (p: Promise<unknown>) =>
      p.then(
        () => 'ok',
        (e: Ably.ErrorInfo) => `${e.statusCode}/${e.code}`,
      )
    // two realtime publishers (40 each: within their own connections' 50) and REST, at once
    const a = await connectedClient(rt.port, { key: rt.gw.key })
    const b = await connectedClient(rt.port, { key: rt.gw.key })
    const [ca, cb] = [a.channels.get(name), b.channels.get(name)]
    await Promise.all([ca.attach(), cb.attach()])
    const rest = rt.rest().channels.get(name)
    const outcomes = await Promise.all([
      ...Array.from({ length: 40 }, (_, i) => outcome(ca.publish('a', String(i)))),
      ...Array.from({ length: 40 }, (_, i) => outcome(cb.publish('b', String(i)))),
      ...Array.from({ length: 40 }, (_, i) => outcome(rest.publish('r', String(i)))),
    ])
    const refused = outcomes.filter((o) => o !== 'ok')
    // 120 at once against a burst of 50: at least 50 pass, and far from all (the refill over the
    // time they take is 50 a second)
    expect(outcomes.filter((o) => o === 'ok').length).toBeGreaterThanOrEqual(50)
    expect(refused.length).toBeGreaterThan(0)
    expect(new Set(refused)).toEqual(new Set(['429/42913']))
    expect([a.connection.state, b.connection.state]).toEqual(['connected', 'connected'])
    // one publish of more messages than a second's budget is refused whole; another channel takes its own 50
    const many = Array.from({ length: 51 }, (_, i) => ({ name: 'm', data: String(i) }))
    expect(await outcome(rt.rest().channels.get(fresh('other')).publish(many))).toBe('429/42913')
    expect(await outcome(rt.rest().channels.get(fresh('other')).publish(many.slice(1)))).toBe('ok')
  })

  test('token requests per account per second: 250', async () => {
    const rest = rt.rest()
    const outcomes = await Promise.all(
      Array.from({ length: 300 }, () =>
        rest.auth.requestToken().then(
          () => 'ok',
          (e: Ably.ErrorInfo) => `${e.statusCode}/${e.code}`,
        ),
      ),
    )
    // a second of the budget at least; how many of the rest are refused depends on how long the
    // 300 take (the bucket refills meanwhile: the rate itself is checked with a test clock in
    // test/limits/rate-limits.test.ts), and every refusal is the hosted one
    expect(outcomes.filter((o) => o === 'ok').length).toBeGreaterThanOrEqual(250)
    for (const o of new Set(outcomes.filter((o) => o !== 'ok'))) expect(o).toBe('429/42910')
    expect(loadConfig({ LIMITS_PROFILE: 'hosted' }).limitTokenRequestsPerSecond).toBe(250)
  })
})

describe('limit profiles', () => {
  test('an explicit setting wins over its profile; the default profile keeps the defaults', () => {
    const hosted = loadConfig({ LIMITS_PROFILE: 'hosted', REALTIME_MAX_CHANNELS: '300' })
    const values = (c: typeof hosted) => [
      c.realtimeMaxChannels,
      c.presenceMaxMembers,
      c.realtimeMaxInboundRate,
      c.channelMaxPublishRate,
      c.accountMaxConnectionRate,
      c.accountMaxConnections,
      c.accountMaxChannels,
      c.accountMaxNewChannelRate,
      c.realtimeMaxOutboundRate,
    ]
    expect(values(hosted)).toEqual([300, 200, 50, 50, 250, 10000, 10000, 250, 50])
    expect(values(loadConfig({}))).toEqual([1000, 20000, 0, 0, 0, 0, 0, 0, 0])
    expect(() => loadConfig({ LIMITS_PROFILE: 'enterprise' })).toThrow(/LIMITS_PROFILE/)
  })

  test('docs/limits.md lists every limit of both profiles', () => {
    const doc = readFileSync(join(import.meta.dir, '../../docs/limits.md'), 'utf8')
    const row = (name: keyof typeof SETTINGS) =>
      doc.split('\n').find((l) => l.startsWith(`| \`${SETTINGS[name].env}\``))
    for (const name of Object.keys(LIMITS_PROFILES.hosted) as Array<keyof typeof SETTINGS>) {
      const r = row(name)
      expect(r, SETTINGS[name].env).toBeDefined()
      expect(r).toContain(`\`${SETTINGS[name].default}\``)
      expect(r).toContain(`\`${LIMITS_PROFILES.hosted[name]}\``)
    }
  })
})
