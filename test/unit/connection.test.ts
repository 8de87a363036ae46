import { afterAll, beforeAll, expect, test } from 'bun:test'
import {
  Action,
  ConnectionRegistry,
  type ConnectParams,
  type DeliveryFilter,
  type Message,
  type PresenceMessage,
  type Transport,
} from '../../src/core/connections'
import { ConnectionPresence } from '../../src/core/connections/connection-presence'
import { createLogger } from '../../src/lib/logger'
import { APP_ID, ClockTimers, createTestGateway, ROOT_KEY, TestClock, type TestGateway } from '../helpers/gateway'
import { makeJwt } from '../helpers/tokens'

/**
 * The realtime connection protocol (core/connections) without a socket: a fake transport records
 * what the connection sends, and the test clock drives its timers (token renewal and expiry,
 * presence grace, the state TTL). The core under it is a real embedded one.
 */

class FakeTransport implements Transport {
  readonly format = 'fake'
  open = true
  sent: Array<Record<string, any>> = []
  delivered: Array<{ channel: string; batch: Message[] }> = []
  ended?: 'closed' | 'terminated'
  buffered = 0
  send(pm: object) {
    this.sent.push(pm as Record<string, any>)
    return 1
  }
  deliver(channel: string, batch: Message[], _filter: DeliveryFilter) {
    this.delivered.push({ channel, batch })
  }
  bufferedBytes() {
    return this.buffered
  }
  close() {
    this.open = false
    this.ended ??= 'closed'
  }
  terminate() {
    this.open = false
    this.ended ??= 'terminated'
  }
  ping() {
    return true
  }
  /** The first message of an action sent since `from`, waited for (the connection answers asynchronously). */
  async next(action: number, from = 0): Promise<Record<string, any>> {
    for (let i = 0; i < 500; i++) {
      const pm = this.sent.slice(from).find((m) => m.action === action)
      if (pm) return pm
      await new Promise((r) => setTimeout(r, 2))
    }
    throw new Error(`no action ${action} sent; sent: ${JSON.stringify(this.sent.map((m) => m.action))}`)
  }
}

let gw: TestGateway
let clock: TestClock
let timers: ClockTimers
let registry: ConnectionRegistry
const TTL = 120_000
const GRACE = 15_000

beforeAll(async () => {
  clock = new TestClock(Date.now())
  gw = await createTestGateway({}, clock)
  timers = new ClockTimers(clock)
  const services = {
    ...gw.core,
    timers,
    connectionPresence: new ConnectionPresence(
      gw.core.presence,
      gw.backend.presence,
      gw.core.limits,
      gw.core.stats,
      gw.config,
      () => {},
      timers,
    ),
  }
  const s = { ...gw.config, connectionStateTtlMs: TTL, presenceGraceMs: GRACE }
  registry = new ConnectionRegistry(services, s, 'unit', createLogger('silent'))
})
afterAll(async () => {
  registry.close()
  await gw.close()
})

const params = (o: Partial<ConnectParams> & { key?: string; accessToken?: string } = {}): ConnectParams => ({
  heartbeats: false,
  echo: true,
  resumeKey: o.resumeKey,
  remainPresentForMs: o.remainPresentForMs,
  credentials: {
    key: o.accessToken ? undefined : (o.key ?? ROOT_KEY),
    accessToken: o.accessToken,
    clientId: o.credentials?.clientId,
    secure: () => true,
  },
})

async function connect(p = params()) {
  const t = new FakeTransport()
  const conn = await registry.open(p, t)
  if (!conn) throw new Error(`refused: ${JSON.stringify(t.sent)}`)
  return { t, conn, connected: t.sent.find((m) => m.action === Action.CONNECTED)! }
}

let n = 0
const fresh = (p: string) => `unit-${p}-${Date.now()}-${n++}`

test('CONNECTED carries the id, the key and the state TTL', async () => {
  const { connected, conn } = await connect()
  expect(connected.connectionId).toBe(conn.id)
  expect(connected.connectionDetails.connectionKey).toBe(conn.key)
  expect(connected.connectionDetails.connectionStateTtl).toBe(TTL)
  expect(connected.error).toBeUndefined()
})

test('resume inside the state TTL: the same connection, no error', async () => {
  const a = await connect()
  a.conn.closedByTransport('cut')
  timers.advance(TTL / 2)
  registry.tick()
  const b = await connect(params({ resumeKey: a.conn.key }))
  expect(b.connected.connectionId).toBe(a.conn.id)
  expect(b.connected.error).toBeUndefined()
})

test('resume past the state TTL: a new connection with 80008', async () => {
  const a = await connect()
  a.conn.closedByTransport('cut')
  timers.advance(TTL + 1000)
  registry.tick()
  // the expiry is recorded in the store (asynchronously): the resume is refused once it is
  let b: Awaited<ReturnType<typeof connect>> | undefined
  for (let i = 0; i < 100; i++) {
    b = await connect(params({ resumeKey: a.conn.key }))
    if (b.connected.error) break
    b.conn.closedByTransport('retry')
    await Bun.sleep(5)
    registry.tick()
  }
  expect(b!.connected.error?.code).toBe(80008)
  expect(b!.connected.connectionId).not.toBe(a.conn.id)
})

test('ACKs answer protocol messages in order; a resend after a resume is answered with its first serials', async () => {
  const channel = fresh('acks')
  const a = await connect()
  for (let msgSerial = 0; msgSerial < 3; msgSerial++)
    a.conn.receive({ action: Action.MESSAGE, channel, msgSerial, messages: [{ data: `m${msgSerial}` }] })
  const acks: Array<Record<string, any>> = []
  for (let seen = 0; seen < 3;) {
    const ack = await a.t.next(Action.ACK, a.t.sent.indexOf(acks[acks.length - 1]!) + 1)
    acks.push(ack)
    seen += ack.count
  }
  // one run from msgSerial 0, or several consecutive runs: never out of order
  let expected = 0
  const serials: string[] = []
  for (const ack of acks) {
    expect(ack.msgSerial).toBe(expected)
    expected += ack.count
    for (const r of ack.res) serials.push(...r.serials)
  }
  expect(serials).toHaveLength(3)

  a.conn.closedByTransport('cut')
  const b = await connect(params({ resumeKey: a.conn.key }))
  expect(b.connected.connectionId).toBe(a.conn.id)
  b.conn.receive({ action: Action.MESSAGE, channel, msgSerial: 1, messages: [{ data: 'm1' }] })
  const again = await b.t.next(Action.ACK)
  expect(again).toMatchObject({ msgSerial: 1, count: 1 })
  expect(again.res[0].serials).toEqual([serials[1]])
  const history = await gw.request(`/channels/${channel}/messages`)
  expect((await history.json()).length).toBe(3)
})

test('presence: members of a dropped connection stay for the grace period, then leave', async () => {
  const channel = fresh('grace')
  const a = await connect(params({ credentials: { clientId: 'ann', secure: () => true } }))
  a.conn.receive({
    action: Action.PRESENCE,
    channel,
    msgSerial: 0,
    presence: [{ action: 2, clientId: 'ann', data: 'here' }],
  })
  await a.t.next(Action.ACK)
  const members = async () => (await gw.core.presence.snapshot(APP_ID, channel)).map((m) => m.clientId)
  expect(await members()).toEqual(['ann'])
  a.conn.closedByTransport('cut')
  timers.advance(GRACE - 1000)
  expect(await members()).toEqual(['ann'])
  timers.advance(2000)
  let left: string[] = ['ann']
  for (let i = 0; i < 200 && left.length; i++) {
    await Bun.sleep(5)
    left = await members()
  }
  expect(left).toEqual([])
})

test('token renewal: AUTH before expiry; a new token keeps the connection; without one, DISCONNECTED 40142', async () => {
  const [keyName, secret] = ROOT_KEY.split(':') as [string, string]
  const now = Math.floor(clock.now() / 1000)
  const jwt = (ttlS: number) =>
    makeJwt(keyName, secret, { iat: now, exp: now + ttlS, 'x-ably-capability': '{"*":["*"]}' })
  const a = await connect(params({ accessToken: jwt(600) }))
  expect(a.t.sent.some((m) => m.action === Action.AUTH)).toBe(false)
  timers.advance(600_000 - 60_000) // before the renewal lead (30 s by default)
  expect(a.t.sent.some((m) => m.action === Action.AUTH)).toBe(false)
  timers.advance(50_000) // within it
  const auth = a.t.sent.findIndex((m) => m.action === Action.AUTH)
  expect(auth).toBeGreaterThan(0)
  // a renewed token: CONNECTED again with the same id
  a.conn.receive({ action: Action.AUTH, auth: { accessToken: jwt(1200) } })
  const again = await a.t.next(Action.CONNECTED, auth + 1)
  expect(again.connectionId).toBe(a.conn.id)
  timers.advance(10_001) // the first token's expiry passes: nothing happens
  expect(a.t.sent.some((m) => m.action === Action.DISCONNECTED)).toBe(false)
  timers.advance(600_000) // the renewed one's expiry, no newer token: DISCONNECTED 40142
  const gone = await a.t.next(Action.DISCONNECTED)
  expect(gone.error.code).toBe(40142)
  expect(a.t.ended).toBe('closed')
})

test('a token with no more than the renewal lead (30 s) left: no AUTH; it runs until it expires, then DISCONNECTED 40142 / 401', async () => {
  const [keyName, secret] = ROOT_KEY.split(':') as [string, string]
  for (const ttlS of [5, 30, 32]) {
    clock.t = Math.ceil(clock.t / 1000) * 1000 // a whole second, as the JWT's times are
    const now = clock.now() / 1000
    const a = await connect(
      params({
        accessToken: makeJwt(keyName, secret, { iat: now, exp: now + ttlS, 'x-ably-capability': '{"*":["*"]}' }),
      }),
    )
    timers.advance(ttlS * 1000 - 1)
    expect(a.t.sent.map((m) => m.action)).toEqual([Action.CONNECTED])
    timers.advance(1)
    const gone = await a.t.next(Action.DISCONNECTED)
    expect([gone.error.code, gone.error.statusCode]).toEqual([40142, 401])
  }
})

test('a token valid for 30 days: AUTH 30 s before its expiry, not before', async () => {
  const [keyName, secret] = ROOT_KEY.split(':') as [string, string]
  clock.t = Math.ceil(clock.t / 1000) * 1000
  const now = clock.now() / 1000
  const days30 = 30 * 86_400
  const a = await connect(
    params({
      accessToken: makeJwt(keyName, secret, { iat: now, exp: now + days30, 'x-ably-capability': '{"*":["*"]}' }),
    }),
  )
  timers.advance(days30 * 1000 - 30_001)
  expect(a.t.sent.map((m) => m.action)).toEqual([Action.CONNECTED])
  timers.advance(1)
  expect(a.t.sent.map((m) => m.action)).toEqual([Action.CONNECTED, Action.AUTH])
  a.conn.receive({ action: Action.CLOSE })
})

test('an embedded MESSAGE is settled within receive (no promise, no event-loop turn); the ACK goes out on the next turn', async () => {
  if (gw.core.backendKind !== 'memory') return
  const channel = fresh('sync-ack')
  const a = await connect()
  // the first publish of the app loads its namespace rules (a promise); the next ones find them cached
  a.conn.receive({ action: Action.MESSAGE, channel, msgSerial: 0, messages: [{ data: 'warm' }] })
  await a.t.next(Action.ACK)
  const settled: number[] = []
  const ack = a.conn.acks.ack.bind(a.conn.acks)
  a.conn.acks.ack = (slot, serials) => {
    settled.push(slot.msgSerial)
    ack(slot, serials)
  }
  a.conn.receive({ action: Action.MESSAGE, channel, msgSerial: 1, messages: [{ data: 'now' }] })
  expect(settled).toEqual([1])
  const answer = await a.t.next(Action.ACK, a.t.sent.findIndex((m) => m.action === Action.ACK) + 1)
  expect(answer).toMatchObject({ msgSerial: 1, count: 1 })
})

test('a PRESENCE still under way when its connection resumes: the resend waits for its outcome, applied once', async () => {
  const channel = fresh('presence-inflight')
  const a = await connect()
  // the channel's queue held up, so the PRESENCE is still in flight when the client resumes
  let release!: () => void
  a.conn.inOrder(channel, () => new Promise<void>((r) => (release = r)))
  const enter = { action: Action.PRESENCE, channel, msgSerial: 0, presence: [{ action: 2, clientId: 'ann' }] }
  a.conn.receive(enter)
  const b = await connect(params({ resumeKey: a.conn.key }))
  expect(b.connected.connectionId).toBe(a.conn.id)
  b.conn.receive(enter) // the client's resend: its ACK was never sent
  release()
  const answer = await b.t.next(Action.ACK)
  expect(answer).toMatchObject({ msgSerial: 0, count: 1 })
  const events = (await (await gw.request(`/channels/${channel}/presence/history`)).json()) as PresenceMessage[]
  expect(events.map((e) => [e.action, e.clientId])).toEqual([[2, 'ann']])
  expect(answer.res[0].serials).toHaveLength(1)
})
