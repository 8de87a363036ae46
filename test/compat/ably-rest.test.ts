/**
 * Compatibility of the REST interface with the official `ably` client (ably-js 2.x), driven
 * against a gateway listening on a real port, once over msgpack (the Node default) and once
 * over JSON.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import * as Ably from 'ably'
import { APP_ID, TestClock, createTestGateway, listen, type TestGateway } from '../helpers/gateway'

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/** A key that may only work on `compat:*` channels and read `readonly:*` ones. */
const LIMITED_KEY_ID = 'limited'
const LIMITED_SECRET = 'limited-key-secret'
const LIMITED_KEY = `${APP_ID}.${LIMITED_KEY_ID}:${LIMITED_SECRET}`
const LIMITED_CAPABILITY = {
  'compat:*': ['channel-metadata', 'history', 'presence', 'publish', 'subscribe'],
  'readonly:*': ['history', 'subscribe'],
}

let gw: TestGateway
let port: number

beforeAll(async () => {
  gw = await createTestGateway()
  port = Number(new URL(listen(gw)).port)
  const now = Date.now()
  await gw.backend.control.createKey({
    appId: APP_ID,
    id: LIMITED_KEY_ID,
    name: 'limited',
    secret: LIMITED_SECRET,
    capability: LIMITED_CAPABILITY,
    status: 0,
    revocableTokens: false,
    created: now,
    modified: now,
  })
})

afterAll(async () => {
  await gw.close()
})

type ClientOptions = Omit<Ably.ClientOptions, 'endpoint' | 'port' | 'tls' | 'useBinaryProtocol'>

/** An ably-js REST client pointed at the test gateway (or at another one listening on `onPort`). */
const restClient = (useBinaryProtocol: boolean, opts: ClientOptions, onPort = port) =>
  new Ably.Rest({ endpoint: '127.0.0.1', port: onPort, tls: false, useBinaryProtocol, logLevel: 0, ...opts })

let seq = 0
/** A channel name not used by any other test. */
const fresh = (prefix: string) => `${prefix}-${++seq}-${Math.random().toString(36).slice(2, 8)}`

/**
 * Awaits a promise that must reject with an Ably error; returns it. Usually an ErrorInfo, but for
 * enveloped requests (`channel.status()`) ably-js rejects with the raw `error` object of the body.
 */
async function ablyError(p: Promise<unknown>): Promise<Pick<Ably.ErrorInfo, 'code' | 'statusCode' | 'message'>> {
  try {
    await p
  } catch (e) {
    const err = e as Ably.ErrorInfo
    expect([typeof err.code, typeof err.statusCode, typeof err.message]).toEqual(['number', 'number', 'string'])
    return err
  }
  throw new Error('expected the call to fail, but it succeeded')
}

/** Follows `next()` from `first` to the last page; returns every page. */
async function allPages<T>(first: Ably.PaginatedResult<T>): Promise<Ably.PaginatedResult<T>[]> {
  const pages = [first]
  let page: Ably.PaginatedResult<T> | null = first
  while (page.hasNext()) {
    page = await page.next()
    if (!page) throw new Error('hasNext() was true but next() returned null')
    pages.push(page)
  }
  return pages
}

const names = (items: Ably.InboundMessage[]) => items.map((m) => m.name)
const numbered = (n: number, prefix = 'm') =>
  Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(2, '0')}`)

// ---------------------------------------------------------------------------------------------
// Tests, once per wire protocol
// ---------------------------------------------------------------------------------------------

describe.each([
  { protocol: 'msgpack', useBinaryProtocol: true },
  { protocol: 'json', useBinaryProtocol: false },
])('ably-js REST over $protocol', ({ protocol, useBinaryProtocol }) => {
  let rest: Ably.Rest
  let limited: Ably.Rest
  const compat = (what: string) => fresh(`compat:${protocol}:${what}`)

  beforeAll(() => {
    rest = restClient(useBinaryProtocol, { key: gw.key })
    limited = restClient(useBinaryProtocol, { key: LIMITED_KEY })
  })

  /** A client authenticated with a token issued by the root key for `params`. */
  async function tokenClient(params: Ably.TokenParams): Promise<{ client: Ably.Rest; token: Ably.TokenDetails }> {
    const token = await rest.auth.requestToken(params)
    return { client: restClient(useBinaryProtocol, { tokenDetails: token }), token }
  }

  describe('publish and history', () => {
    test('a single message round-trips with its name, data, id, serial and timestamp', async () => {
      const ch = rest.channels.get(compat('single'))
      const result = await ch.publish('greeting', 'hello world')
      expect(result.serials).toHaveLength(1)
      expect(typeof result.serials[0]).toBe('string')

      const page = await ch.history()
      expect(page.items).toHaveLength(1)
      const m = page.items[0]!
      expect(m.name).toBe('greeting')
      expect(m.data).toBe('hello world')
      expect(m.encoding ?? null).toBeNull()
      expect(typeof m.id).toBe('string')
      expect(m.serial).toBe(result.serials[0]!)
      expect(typeof m.timestamp).toBe('number')
      expect(m.action).toBe('message.create')
    })

    test('an array publish keeps order and gives one serial per message', async () => {
      const ch = rest.channels.get(compat('array'))
      const result = await ch.publish([
        { name: 'a', data: '1' },
        { name: 'b', data: '2' },
        { name: 'c', data: '3' },
      ])
      expect(result.serials).toHaveLength(3)
      expect(new Set(result.serials).size).toBe(3)

      const page = await ch.history({ direction: 'forwards' })
      expect(page.items.map((m) => [m.name, m.data])).toEqual([
        ['a', '1'],
        ['b', '2'],
        ['c', '3'],
      ])
      expect(page.items.map((m) => m.serial)).toEqual(result.serials as string[])
      // ably-js gives one publish idempotent ids with a shared base: `<base>:0`, `<base>:1`, ...
      const bases = new Set(page.items.map((m) => m.id.slice(0, m.id.lastIndexOf(':'))))
      expect(bases.size).toBe(1)
      expect(page.items.map((m) => m.id.slice(m.id.lastIndexOf(':') + 1))).toEqual(['0', '1', '2'])
    })

    test('object and array data come back as equal values, with no encoding left', async () => {
      const ch = rest.channels.get(compat('object'))
      const obj = { text: 'héllo ✓', n: 42, nested: { list: [1, 'two', null, true] } }
      await ch.publish('obj', obj)
      await ch.publish('arr', [1, 2, { three: 3 }])

      const page = await ch.history({ direction: 'forwards' })
      expect(page.items.map((m) => m.name)).toEqual(['obj', 'arr'])
      expect(page.items[0]!.data).toEqual(obj)
      expect(page.items[1]!.data).toEqual([1, 2, { three: 3 }])
      for (const m of page.items) expect(m.encoding ?? null).toBeNull()
    })

    test('binary Buffer data round-trips byte for byte', async () => {
      const ch = rest.channels.get(compat('binary'))
      const bytes = Buffer.from([0x00, 0x01, 0x7f, 0x80, 0xde, 0xad, 0xbe, 0xef, 0xff])
      await ch.publish('bin', bytes)

      const page = await ch.history()
      const m = page.items[0]!
      expect(Buffer.isBuffer(m.data)).toBe(true)
      expect(Buffer.compare(m.data as Buffer, bytes)).toBe(0)
      expect(m.encoding ?? null).toBeNull()
    })

    test('binary published over this protocol reads back over the other one', async () => {
      const name = compat('cross')
      const bytes = Buffer.from('cross-protocol bytes \u0000\u0001')
      await rest.channels.get(name).publish('bin', bytes)
      const other = restClient(!useBinaryProtocol, { key: gw.key })
      const m = (await other.channels.get(name).history()).items[0]!
      expect(Buffer.isBuffer(m.data)).toBe(true)
      expect(Buffer.compare(m.data as Buffer, bytes)).toBe(0)
    })

    test('extras and an explicit clientId round-trip; a message may have no data', async () => {
      const ch = rest.channels.get(compat('extras'))
      await ch.publish({ name: 'with-extras', data: 'd', clientId: 'explicit-client', extras: { headers: { k: 'v' } } })
      await ch.publish({ name: 'no-data' })
      const page = await ch.history({ direction: 'forwards' })
      expect(page.items[0]).toMatchObject({
        name: 'with-extras',
        data: 'd',
        clientId: 'explicit-client',
        extras: { headers: { k: 'v' } },
      })
      expect(page.items[1]!.name).toBe('no-data')
      expect(page.items[1]!.data ?? null).toBeNull()
    })

    test('history of a channel never used is an empty last page', async () => {
      const page = await rest.channels.get(compat('unused')).history()
      expect(page.items).toEqual([])
      expect(page.hasNext()).toBe(false)
      expect(page.isLast()).toBe(true)
      expect(await page.next()).toBeNull()
    })
  })

  describe('history paging (25 messages, limit 10)', () => {
    const all = numbered(25)
    let ch: Ably.Channel

    beforeAll(async () => {
      ch = rest.channels.get(compat('paging'))
      // Five publishes of five, so both serial order within a publish and across publishes count.
      for (let i = 0; i < 25; i += 5) await ch.publish(all.slice(i, i + 5).map((name) => ({ name, data: name })))
    })

    test('forwards: pages of 10, 10, 5 in publish order, no duplicates, last page has no next', async () => {
      const first = await ch.history({ direction: 'forwards', limit: 10 })
      expect(first.hasNext()).toBe(true)
      expect(first.isLast()).toBe(false)
      const pages = await allPages(first)
      expect(pages.map((p) => p.items.length)).toEqual([10, 10, 5])
      expect(pages.flatMap((p) => names(p.items))).toEqual(all)
      const ids = pages.flatMap((p) => p.items.map((m) => m.id))
      expect(new Set(ids).size).toBe(25)
      const last = pages[pages.length - 1]!
      expect(last.hasNext()).toBe(false)
      expect(last.isLast()).toBe(true)
      expect(await last.next()).toBeNull()
    })

    test('backwards (the default): newest first across pages, no duplicates', async () => {
      const first = await ch.history({ limit: 10 })
      expect(names(first.items)).toEqual(all.slice(15).reverse())
      const pages = await allPages(first)
      expect(pages.map((p) => p.items.length)).toEqual([10, 10, 5])
      expect(pages.flatMap((p) => names(p.items))).toEqual([...all].reverse())
      expect(new Set(pages.flatMap((p) => p.items.map((m) => m.serial))).size).toBe(25)
      expect(await pages[2]!.next()).toBeNull()
    })

    test('first() from a later page goes back to the first page', async () => {
      const second = await (await ch.history({ direction: 'forwards', limit: 10 })).next()
      expect(names(second!.items)).toEqual(all.slice(10, 20))
      const again = await second!.first()
      expect(names(again.items)).toEqual(all.slice(0, 10))
    })

    test('a channel name needing URL escaping pages through the same channel', async () => {
      const odd = rest.channels.get(compat('odd name/ü?&#%'))
      await odd.publish(numbered(5, 'o').map((name) => ({ name })))
      const pages = await allPages(await odd.history({ direction: 'forwards', limit: 2 }))
      expect(pages.flatMap((p) => names(p.items))).toEqual(numbered(5, 'o'))
    })

    test('an exact multiple of the limit ends with no next link', async () => {
      const page = await ch.history({ direction: 'forwards', limit: 25 })
      expect(page.items).toHaveLength(25)
      expect(page.hasNext()).toBe(false)
    })
  })

  describe('idempotent publishing', () => {
    test('publishing the same explicit id twice leaves one message in history', async () => {
      const ch = rest.channels.get(compat('idempotent'))
      const id = `explicit-${protocol}-${Math.random().toString(36).slice(2)}`
      const first = await ch.publish({ id, name: 'once', data: 'payload' })
      const second = await ch.publish({ id, name: 'once', data: 'payload' })
      expect(second.serials).toEqual(first.serials)

      const page = await ch.history()
      expect(page.items).toHaveLength(1)
      expect(page.items[0]!.id).toBe(id)
      expect(page.items[0]!.data).toBe('payload')
    })

    test('a retried multi-message publish with ids <base>:<i> is not appended again', async () => {
      const ch = rest.channels.get(compat('idempotent-batch'))
      const msgs = [
        { id: 'retry-base:0', name: 'x', data: '0' },
        { id: 'retry-base:1', name: 'y', data: '1' },
      ]
      await ch.publish(msgs)
      await ch.publish(msgs)
      const page = await ch.history({ direction: 'forwards' })
      expect(page.items.map((m) => m.id)).toEqual(['retry-base:0', 'retry-base:1'])
    })
  })

  describe('token auth', () => {
    test('auth.requestToken returns TokenDetails with canonical capability and clientId', async () => {
      const token = await rest.auth.requestToken({
        clientId: 'alice',
        capability: { 'compat:*': ['subscribe', 'publish'], 'compat:other': ['history'] },
      })
      expect(typeof token.token).toBe('string')
      expect(token.token.length).toBeGreaterThan(0)
      // keyName is sent by the server (TD) though ably-js does not declare it.
      expect((token as Ably.TokenDetails & { keyName?: string }).keyName).toBe(gw.key.slice(0, gw.key.indexOf(':')))
      expect(token.clientId).toBe('alice')
      expect(token.capability).toBe('{"compat:*":["publish","subscribe"],"compat:other":["history"]}')
      expect(token.expires - token.issued).toBe(60 * 60 * 1000)
    })

    test('a token asking for more than the key grants gets the intersection', async () => {
      const token = await limited.auth.requestToken({ capability: { 'compat:*': ['*'] } })
      expect(JSON.parse(token.capability)).toEqual({ 'compat:*': LIMITED_CAPABILITY['compat:*'] })
    })

    test('a token with no capability requested gets the key capability', async () => {
      const token = await limited.auth.requestToken()
      expect(JSON.parse(token.capability)).toEqual(LIMITED_CAPABILITY)
    })

    test('a token client publishes and reads history; messages carry its clientId', async () => {
      const name = compat('token')
      const { client } = await tokenClient({ clientId: 'bob', capability: { [name]: ['publish', 'history'] } })
      const ch = client.channels.get(name)
      await ch.publish('by-token', { ok: true })
      const page = await ch.history()
      expect(page.items).toHaveLength(1)
      expect(page.items[0]).toMatchObject({ name: 'by-token', data: { ok: true }, clientId: 'bob' })
    })

    test('createTokenRequest + authCallback: the signed TokenRequest is exchanged and used', async () => {
      const name = compat('token-request')
      const tokenRequest = await rest.auth.createTokenRequest({
        clientId: 'carol',
        capability: { [name]: ['publish', 'history'] },
      })
      expect(tokenRequest.keyName).toBe(gw.key.slice(0, gw.key.indexOf(':')))
      expect(typeof tokenRequest.mac).toBe('string')
      expect(tokenRequest.nonce.length).toBeGreaterThanOrEqual(16)

      let calls = 0
      const client = restClient(useBinaryProtocol, {
        authCallback: (_params, callback) => {
          calls++
          callback(null, tokenRequest)
        },
      })
      const ch = client.channels.get(name)
      await ch.publish('signed', 'via token request')
      const page = await ch.history()
      expect(calls).toBe(1)
      expect(page.items[0]).toMatchObject({ name: 'signed', data: 'via token request', clientId: 'carol' })
      // The exchanged token carries the requested capability, not the key's: other channels are refused.
      const err = await ablyError(client.channels.get(compat('token-request-other')).publish('x', 'y'))
      expect(err.code).toBe(40160)
    })

    test('a TokenRequest cannot be exchanged twice (nonce replay is refused with 401)', async () => {
      const tokenRequest = await rest.auth.createTokenRequest({ clientId: 'dave' })
      const exchange = () => rest.auth.requestToken(undefined, { authCallback: (_p, cb) => cb(null, tokenRequest) })
      expect((await exchange()).clientId).toBe('dave')
      const err = await ablyError(exchange())
      expect(err.statusCode).toBe(401)
      expect(err.code).toBe(40105)
    })
  })

  describe('request errors', () => {
    test('a wrong key secret is refused with 401 / 40101', async () => {
      const bad = restClient(useBinaryProtocol, { key: `${gw.key.slice(0, gw.key.indexOf(':'))}:not-the-secret` })
      const err = await ablyError(bad.channels.get(compat('bad-key')).publish('x', 'y'))
      expect(err.statusCode).toBe(401)
      expect(err.code).toBe(40101)
    })

    test('a history limit above 1000 is refused with 400 / 40003', async () => {
      const err = await ablyError(rest.channels.get(compat('bad-limit')).history({ limit: 1001 }))
      expect(err.statusCode).toBe(400)
      expect(err.code).toBe(40003)
    })
  })

  describe('capability refusal', () => {
    test('a subscribe-only token trying to publish gets 403 / 40160', async () => {
      const name = compat('subscribe-only')
      const { client } = await tokenClient({ capability: { [name]: ['subscribe'] } })
      const err = await ablyError(client.channels.get(name).publish('nope', 'x'))
      expect(err.statusCode).toBe(403)
      expect(err.code).toBe(40160)
      expect((await rest.channels.get(name).history()).items).toEqual([])
    })

    test('a key publishing outside its capability gets 403 / 40160', async () => {
      const err = await ablyError(limited.channels.get(fresh(`readonly:${protocol}`)).publish('nope', 'x'))
      expect(err.statusCode).toBe(403)
      expect(err.code).toBe(40160)
    })

    test('requesting a token capability outside the key gets 401', async () => {
      const err = await ablyError(limited.auth.requestToken({ capability: { [`elsewhere:${protocol}`]: ['publish'] } }))
      expect(err.statusCode).toBe(401)
      expect(err.code).toBe(40160)
    })
  })

  describe('presence and channel metadata', () => {
    test('presence.get on an empty channel is an empty list', async () => {
      const page = await rest.channels.get(compat('presence-empty')).presence.get()
      expect(page.items).toEqual([])
      expect(page.hasNext()).toBe(false)
    })

    test('channel.status() returns channelId and occupancy metrics', async () => {
      const name = compat('status')
      await rest.channels.get(name).publish('x', 'y')
      const details = await limited.channels.get(name).status()
      expect(details.channelId).toBe(name)
      expect(typeof details.status.isActive).toBe('boolean')
      const metrics = details.status.occupancy.metrics
      for (const k of [
        'connections',
        'publishers',
        'subscribers',
        'presenceConnections',
        'presenceMembers',
        'presenceSubscribers',
      ] as const) {
        expect(typeof metrics[k]).toBe('number')
      }
      expect(metrics.presenceMembers).toBe(0)
    })

    test('channel.status() without channel-metadata is refused with 40160', async () => {
      const name = compat('status-denied')
      const { client } = await tokenClient({ capability: { [name]: ['subscribe'] } })
      const err = await ablyError(client.channels.get(name).status())
      expect(err.code).toBe(40160)
      expect(err.statusCode).toBe(403)
    })
  })

  describe('batch publish', () => {
    test('one spec to several channels: successCount and per-channel results', async () => {
      const channels = [compat('batch-a'), compat('batch-b')]
      const result = await rest.batchPublish({
        channels,
        messages: [
          { name: 'b1', data: 'one' },
          { name: 'b2', data: { two: 2 } },
        ],
      })
      expect(result.successCount).toBe(2)
      expect(result.failureCount).toBe(0)
      expect(result.results.map((r) => r.channel)).toEqual(channels)
      for (const r of result.results) {
        expect('error' in r).toBe(false)
        const ok = r as Ably.BatchPublishSuccessResult
        expect(typeof ok.messageId).toBe('string')
        expect(ok.serials).toHaveLength(2)
      }
      for (const channel of channels) {
        const page = await rest.channels.get(channel).history({ direction: 'forwards' })
        expect(page.items.map((m) => [m.name, m.data])).toEqual([
          ['b1', 'one'],
          ['b2', { two: 2 }],
        ])
      }
    })

    test('several specs give one BatchResult each', async () => {
      const [a, b, c] = [compat('multi-a'), compat('multi-b'), compat('multi-c')]
      const results = await rest.batchPublish([
        { channels: [a], messages: [{ name: 'first', data: '1' }] },
        { channels: [b, c], messages: [{ name: 'second', data: '2' }] },
      ])
      expect(results).toHaveLength(2)
      expect(results.map((r) => r.successCount)).toEqual([1, 2])
      expect(results[1]!.results.map((r) => r.channel)).toEqual([b, c])
      expect((await rest.channels.get(c).history()).items[0]).toMatchObject({ name: 'second', data: '2' })
    })

    test('a channel the token may not publish to fails inside a successful call', async () => {
      const allowed = compat('batch-allowed')
      const forbidden = compat('batch-forbidden')
      const { client } = await tokenClient({ capability: { [allowed]: ['publish'], [forbidden]: ['subscribe'] } })
      const result = await client.batchPublish({
        channels: [allowed, forbidden],
        messages: [{ name: 'partial', data: 'p' }],
      })
      expect(result.successCount).toBe(1)
      expect(result.failureCount).toBe(1)
      const ok = result.results.find((r) => r.channel === allowed) as Ably.BatchPublishSuccessResult
      const failed = result.results.find((r) => r.channel === forbidden) as Ably.BatchPublishFailureResult
      expect(ok.serials).toHaveLength(1)
      expect(failed.error.code).toBe(40160)
      // 401 inside a batch entry, as the hosted service and the official client have it (a whole
      // request refused stays 403, as the spec says)
      expect(failed.error.statusCode).toBe(401)
      expect((await rest.channels.get(allowed).history()).items).toHaveLength(1)
      expect((await rest.channels.get(forbidden).history()).items).toEqual([])
    })

    test('batch presence: a channel the token may not read fails inside a successful call with 401 / 40160', async () => {
      const allowed = compat('batch-presence-allowed')
      const forbidden = compat('batch-presence-forbidden')
      const { client } = await tokenClient({ capability: { [allowed]: ['subscribe'], [forbidden]: ['publish'] } })
      // one BatchResult for the call (the client's typings say an array; it hands on the body as is)
      const result = (await client.batchPresence([allowed, forbidden])) as unknown as Ably.BatchResult<
        Ably.BatchPresenceSuccessResult | Ably.BatchPresenceFailureResult
      >
      expect(result.successCount).toBe(1)
      expect(result.failureCount).toBe(1)
      const failed = result.results.find((r) => r.channel === forbidden) as Ably.BatchPresenceFailureResult
      expect(failed.error.code).toBe(40160)
      expect(failed.error.statusCode).toBe(401)
      const ok = result.results.find((r) => r.channel === allowed) as Ably.BatchPresenceSuccessResult
      expect(ok.presence).toEqual([])
    })
  })

  describe('stats and time', () => {
    test('rest.stats() returns records with flattened entries after publishes', async () => {
      const ch = rest.channels.get(compat('stats'))
      await ch.publish('s1', 'x')
      await ch.publish('s2', 'y')
      const page = await rest.stats({ direction: 'backwards', limit: 10 })
      expect(page.items.length).toBeGreaterThan(0)
      const record = page.items[0]!
      expect(record.intervalId).toMatch(/^\d{4}-\d{2}-\d{2}:\d{2}:\d{2}$/)
      expect(record.appId).toBe(APP_ID)
      expect(typeof record.schema).toBe('string')
      const total = page.items.reduce((n, r) => n + (r.entries['messages.all.all.count'] ?? 0), 0)
      expect(total).toBeGreaterThanOrEqual(2)
      expect(record.entries['messages.inbound.rest.messages.count']).toBeGreaterThan(0)
    })

    test('rest.stats() by hour also works', async () => {
      const page = await rest.stats({ unit: 'hour' })
      expect(page.items.length).toBeGreaterThan(0)
      expect(page.items[0]!.intervalId).toMatch(/^\d{4}-\d{2}-\d{2}:\d{2}$/)
    })

    test('stats pages over several minutes, forwards and backwards, with per-minute counts', async () => {
      // A gateway of its own on a settable clock, so that traffic falls into three distinct minutes.
      const t0 = Date.UTC(2030, 0, 2, 3, 4, 5)
      const clock = new TestClock(t0)
      const own = await createTestGateway({}, clock)
      try {
        const client = restClient(useBinaryProtocol, { key: own.key }, Number(new URL(listen(own)).port))
        const ch = client.channels.get('stats-paging')
        for (const count of [1, 2, 3]) {
          for (let i = 0; i < count; i++) await ch.publish('s', String(i))
          clock.advance(60_000)
        }
        // up to the last minute with publishes (the stats queries themselves are traffic of the current minute)
        const params = { start: t0 - 60_000, end: clock.now() - 60_000, limit: 2 }
        const counts = (pages: Ably.PaginatedResult<Ably.Stats>[]) =>
          pages.flatMap((p) => p.items.map((r) => [r.intervalId, r.entries['messages.all.messages.count']]))

        const forwards = await allPages(await client.stats({ ...params, direction: 'forwards' }))
        expect(forwards.map((p) => p.items.length)).toEqual([2, 1])
        expect(counts(forwards)).toEqual([
          ['2030-01-02:03:04', 1],
          ['2030-01-02:03:05', 2],
          ['2030-01-02:03:06', 3],
        ])

        const backwards = await allPages(await client.stats({ ...params, direction: 'backwards' }))
        expect(backwards.map((p) => p.items.length)).toEqual([2, 1])
        expect(counts(backwards)).toEqual([
          ['2030-01-02:03:06', 3],
          ['2030-01-02:03:05', 2],
          ['2030-01-02:03:04', 1],
        ])
      } finally {
        await own.close()
      }
    })

    test('stats without the stats capability is refused', async () => {
      const err = await ablyError(limited.stats())
      expect(err.code).toBe(40160)
    })

    test('rest.time() returns the server clock in ms', async () => {
      const before = Date.now()
      const t = await rest.time()
      const after = Date.now()
      expect(Number.isInteger(t)).toBe(true)
      expect(t).toBeGreaterThanOrEqual(before)
      expect(t).toBeLessThanOrEqual(after)
    })
  })
})
