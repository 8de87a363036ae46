import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import Ably from 'ably'
import { APP_ID, createTestGateway, type TestGateway } from '../helpers/gateway'
import { openSse } from '../helpers/sse'

let gw: TestGateway
let port: number
let base: string
beforeAll(async () => {
  gw = await createTestGateway({ presenceMaxMembers: 300 })
  base = gw.listen()
  port = Number(new URL(base).port)
  // a key that may subscribe but not enter presence, for the capability test
  await gw.backend.control.createKey({
    appId: APP_ID,
    id: 'nopresence',
    name: 'no presence',
    secret: 'np-secret',
    capability: { '*': ['subscribe', 'publish'] },
    status: 0,
    revocableTokens: false,
    created: Date.now(),
    modified: Date.now(),
  })
})
afterAll(async () => {
  await gw.close()
})

const clients: Ably.Realtime[] = []
function client(o: Partial<Ably.ClientOptions> & { binary: boolean }): Ably.Realtime {
  const { binary, ...rest } = o
  const c = new Ably.Realtime({
    key: gw.key,
    endpoint: '127.0.0.1',
    port,
    tls: false,
    useBinaryProtocol: binary,
    logLevel: 0,
    ...rest,
  } as Ably.ClientOptions)
  clients.push(c)
  return c
}
afterAll(() => {
  for (const c of clients) c.close()
})

async function until(check: () => boolean | Promise<boolean>, ms = 5000): Promise<void> {
  const end = Date.now() + ms
  while (!(await check())) {
    if (Date.now() > end) throw new Error('timed out waiting')
    await Bun.sleep(10)
  }
}
const restMembers = async (channel: string) =>
  (await (await gw.request(`/channels/${channel}/presence?limit=1000`)).json()) as Array<Record<string, unknown>>

for (const binary of [true, false]) {
  const fmt = binary ? 'msgpack' : 'json'
  describe(`presence over the realtime protocol (${fmt})`, () => {
    test('enter, update and leave are seen by another client; get() and REST agree; history has them', async () => {
      const ch = `p-basic-${fmt}`
      const alice = client({ binary, clientId: 'alice' })
      const bob = client({ binary, clientId: 'bob' })
      const seen: string[] = []
      await bob.channels
        .get(ch)
        .presence.subscribe((m) => seen.push(`${m.action}:${m.clientId}:${JSON.stringify(m.data)}`))
      const pa = alice.channels.get(ch).presence
      await pa.enter({ mood: 'happy' })
      await pa.update({ mood: 'busy' })
      await until(() => seen.length === 2)
      const got = await bob.channels.get(ch).presence.get()
      expect(got.map((m) => [m.clientId, m.data])).toEqual([['alice', { mood: 'busy' }]])
      expect(got[0]!.connectionId).toBe(alice.connection.id!)
      expect(got[0]!.id).toMatch(new RegExp(`^${alice.connection.id}:\\d+:0$`))
      const rest = await restMembers(ch)
      expect(rest.map((m) => [m.clientId, m.action, m.data, m.encoding])).toEqual([
        ['alice', 1, '{"mood":"busy"}', 'json'],
      ])
      await pa.leave()
      await until(() => seen.length === 3)
      expect(seen).toEqual([
        'enter:alice:{"mood":"happy"}',
        'update:alice:{"mood":"busy"}',
        'leave:alice:{"mood":"busy"}',
      ])
      expect(await restMembers(ch)).toEqual([])
      const history = (await (await gw.request(`/channels/${ch}/presence/history?direction=forwards`)).json()) as any[]
      expect(history.map((e) => [e.action, e.clientId])).toEqual([
        [2, 'alice'],
        [4, 'alice'],
        [3, 'alice'],
      ])
    })

    test('a new attacher gets every member through a paged SYNC (250 members)', async () => {
      const ch = `p-sync-${fmt}`
      const host = client({ binary }) // the root key may act as any clientId
      const p = host.channels.get(ch).presence
      await Promise.all(Array.from({ length: 250 }, (_, i) => p.enterClient(`u${i}`, `d${i}`)))
      const late = client({ binary, clientId: 'late' })
      const members = await late.channels.get(ch).presence.get()
      expect(members.length).toBe(250)
      expect(new Set(members.map((m) => m.clientId)).size).toBe(250)
      expect(members.find((m) => m.clientId === 'u7')!.data).toBe('d7')
    })

    test('REST presence pages reach every member (150 members, pages of 100 then 50, and of 7)', async () => {
      const ch = `p-rest-pages-${fmt}`
      const host = client({ binary })
      const p = host.channels.get(ch).presence
      await Promise.all(Array.from({ length: 150 }, (_, i) => p.enterClient(`u${i}`, `d${i}`)))
      const rest = new Ably.Rest({ key: gw.key, endpoint: '127.0.0.1', port, tls: false, useBinaryProtocol: binary })
      const first = await rest.channels.get(ch).presence.get({ limit: 100 })
      expect(first.items.length).toBe(100)
      expect(first.hasNext()).toBe(true)
      const second = (await first.next())!
      expect(second.items.length).toBe(50)
      expect(second.hasNext()).toBe(false)
      const seen = [...first.items, ...second.items].map((m) => m.clientId)
      expect(new Set(seen).size).toBe(150)
      // small pages: every member exactly once
      const all: string[] = []
      let page: Ably.PaginatedResult<Ably.PresenceMessage> | null = await rest.channels
        .get(ch)
        .presence.get({ limit: 7 })
      while (page) {
        all.push(...page.items.map((m) => m.clientId))
        page = page.hasNext() ? await page.next() : null
      }
      expect(all.length).toBe(150)
      expect(new Set(all).size).toBe(150)
    })

    test('a dropped connection leaves after its grace period; closing leaves at once', async () => {
      const ch = `p-drop-${fmt}`
      const watcher = client({ binary, clientId: 'watcher' })
      const left: string[] = []
      await watcher.channels.get(ch).presence.subscribe('leave', (m) => left.push(m.clientId!))
      const dropper = client({ binary, clientId: 'dropper', transportParams: { remainPresentFor: 1000 } })
      await dropper.channels.get(ch).presence.enter('here')
      await until(async () => (await restMembers(ch)).length === 1)
      // the socket dies without a goodbye, and the client does not come back
      const conn = gw.server!.realtime.connection(dropper.connection.id!)!
      ;(dropper as any).connection.connectionManager.requestState({ state: 'suspended' })
      const t = Date.now() // before the drop: the grace period cannot start earlier
      conn.terminate()
      await until(() => left.includes('dropper'), 5000)
      expect(Date.now() - t).toBeGreaterThanOrEqual(900)

      const closer = client({ binary, clientId: 'closer' })
      await closer.channels.get(ch).presence.enter()
      await until(async () => (await restMembers(ch)).some((m) => m.clientId === 'closer'))
      closer.close()
      await until(() => left.includes('closer'), 2000)
    })

    test('a connection that resumes within the grace period keeps its members (no leave)', async () => {
      const ch = `p-resume-${fmt}`
      const watcher = client({ binary, clientId: 'watcher2' })
      const events: string[] = []
      await watcher.channels.get(ch).presence.subscribe((m) => events.push(`${m.action}:${m.clientId}`))
      const stayer = client({ binary, clientId: 'stayer', transportParams: { remainPresentFor: 1000 } })
      await stayer.channels.get(ch).presence.enter('x')
      await until(() => events.length === 1)
      const id = stayer.connection.id
      const reconnected = new Promise<Ably.ConnectionStateChange>((resolve) =>
        stayer.connection.once('connected', resolve),
      )
      gw.server!.realtime.connection(id!)!.terminate() // the socket dies; the client reconnects and resumes
      await reconnected
      expect(stayer.connection.id).toBe(id)
      await Bun.sleep(1500) // past the grace period
      expect(events).toEqual(['enter:stayer'])
      expect((await restMembers(ch)).map((m) => m.clientId)).toEqual(['stayer'])
      await stayer.channels.get(ch).presence.leave() // the resumed connection still knows its member
      await until(() => events.length === 2)
      expect(events[1]).toBe('leave:stayer')
    })
  })
}

describe('presence everywhere', () => {
  test('an event stream receives the same presence events in the same order, between messages', async () => {
    const ch = 'p-sse'
    const s = await openSse(`${base}/sse?v=1.2&channels=${ch}&key=${encodeURIComponent(gw.key)}`)
    const rt = client({ binary: true, clientId: 'eve' })
    const channel = rt.channels.get(ch)
    await channel.publish('m', 'before')
    await channel.presence.enter('hi')
    await channel.publish('m', 'after')
    await channel.presence.leave()
    await s.until((e) => e.filter((x) => x.event === 'message' || x.event === 'presence').length === 4)
    const seq = s.events
      .filter((x) => x.event === 'message' || x.event === 'presence')
      .map((x) => {
        const d = JSON.parse(x.data)
        return x.event === 'presence' ? `presence:${d.action}:${d.clientId}` : d.data
      })
    expect(seq).toEqual(['before', 'presence:2:eve', 'after', 'presence:3:eve'])
    s.close()
  })

  test('app stats count presence events and messages that came over realtime connections', async () => {
    const rt = client({ binary: true, clientId: 'counted' })
    const ch = rt.channels.get('p-stats')
    await ch.presence.enter()
    await ch.presence.update('x')
    await ch.publish('m', 'over realtime')
    const [minute] = (await (await gw.request('/stats?unit=minute&limit=1')).json()) as Array<{
      entries: Record<string, number>
    }>
    expect(minute!.entries['messages.inbound.realtime.presence.count']).toBeGreaterThanOrEqual(2)
    expect(minute!.entries['messages.inbound.realtime.messages.count']).toBeGreaterThanOrEqual(1)
    expect(minute!.entries['messages.inbound.all.presence.count']).toBeGreaterThanOrEqual(2)
  })

  test('occupancy counts realtime attachments by mode and presence members and connections', async () => {
    const ch = 'p-occupancy'
    const a = client({ binary: true, clientId: 'a' })
    const b = client({ binary: true, clientId: 'b' })
    await a.channels.get(ch).presence.enter()
    await b.channels.get(ch, { modes: ['PUBLISH'] }).attach()
    const details = (await (await gw.request(`/channels/${ch}`)).json()) as any
    expect(details.status.occupancy.metrics).toMatchObject({
      connections: 2,
      publishers: 2,
      subscribers: 1,
      presenceSubscribers: 1,
      presenceMembers: 1,
      presenceConnections: 1,
      // neither asked for the object modes (test/objects/occupancy.test.ts counts those)
      objectPublishers: 0,
      objectSubscribers: 0,
    })
  })

  test('refused presence: no capability, no clientId, over the member limit, oversized data, bad action', async () => {
    const noCap = new Ably.Realtime({
      key: `${APP_ID}.nopresence:np-secret`,
      clientId: 'x',
      endpoint: '127.0.0.1',
      port,
      tls: false,
      logLevel: 0,
    } as Ably.ClientOptions)
    clients.push(noCap)
    const err1 = await noCap.channels
      .get('p-refused')
      .presence.enter()
      .catch((e) => e)
    expect(err1.code).toBe(40160)

    const anon = client({ binary: true }) // a Basic key without a clientId may not enter as itself
    const err2 = await anon.channels
      .get('p-refused')
      .presence.enter()
      .catch((e) => e)
    expect(err2.code).toBe(91000)

    const crowd = client({ binary: true })
    const p = crowd.channels.get('p-full').presence
    await Promise.all(Array.from({ length: 300 }, (_, i) => p.enterClient(`m${i}`)))
    const err3 = await p.enterClient('one-too-many').catch((e) => e)
    expect(err3.code).toBe(91003)
    expect((await restMembers('p-full')).length).toBe(300)

    // a sandbox app's own, tighter member limit (limits.presence.maxMembers)
    const sandbox = await gw.core.sandbox.provision({ keys: [{}], limits: { presence: { maxMembers: 2 } } })
    const small = client({ binary: true, key: sandbox.keys[0]!.keyStr })
    const sp = small.channels.get('p-small').presence
    await sp.enterClient('one')
    await sp.enterClient('two')
    expect((await sp.enterClient('three').catch((e) => e)).code).toBe(91003)

    const big = client({ binary: true, clientId: 'big' })
    const err4 = await big.channels
      .get('p-refused')
      .presence.enter('x'.repeat(70_000))
      .catch((e) => e)
    expect(err4.code).toBe(40009)
    expect(await restMembers('p-refused')).toEqual([])
  })
})
