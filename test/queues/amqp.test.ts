import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect, type Channel, type ChannelModel, type ConsumeMessage } from 'amqplib'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { closeQuietly } from '../../src/backend/amqp/connection'
import { hmacSha256 } from '../../src/lib/crypto'
import { metrics } from '../../src/lib/metrics'
import { waitFor } from '../helpers/wait'
import { consume } from './consumer'
import { ACCESS_TOKEN, addApp, APP_ID, createTestGateway, type TestGateway } from '../helpers/gateway'
import { closeClients, connectedClient, FORMATS } from '../helpers/realtime'
import { requireSystem } from '../helpers/system'
import { TcpProxy } from '../helpers/tcp-proxy'

/**
 * App queues on the local RabbitMQ (127.0.0.1:5672 guest/guest, management API on 15672): the
 * gateway reaches it through a TCP proxy of the test's own, so the broker can be cut away and
 * given back; consumers connect directly with the credentials the queue record hands out.
 * RabbitMQ is shared and persistent: every app here is new (random id) and cleaned up.
 */
const HAVE = requireSystem('/usr/sbin/rabbitmq-server', 'rabbitmq-server')
const ADMIN_URL = 'amqp://guest:guest@127.0.0.1:5672'
const MANAGEMENT = 'http://127.0.0.1:15672/api'
const MANAGEMENT_AUTH = 'Basic ' + Buffer.from('guest:guest').toString('base64')

let gw: TestGateway
let proxy: TcpProxy
let admin: ChannelModel
const apps: string[] = []
const consumers: ChannelModel[] = []

const body = async (r: Response) => (await r.json()) as any
/** The management API (`/v1`) of a gateway, as the operator. */
const managementOf =
  (g: TestGateway) =>
  (path: string, method = 'GET', json?: unknown) =>
    g.request(`/v1${path}`, { method, json, key: null, headers: { authorization: `Bearer ${ACCESS_TOKEN}` } })
const v1 = (path: string, method = 'GET', json?: unknown) => managementOf(gw)(path, method, json)

/** A new app (on `gw`, or through another gateway's management API) with a key that may publish anywhere. */
async function newApp(on = v1): Promise<{ appId: string; key: string }> {
  const accountId = (await body(await on('/me'))).account.id
  const app = await body(await on(`/accounts/${accountId}/apps`, 'POST', { name: `amqp-${Date.now()}` }))
  apps.push(app.id)
  const key = await body(await on(`/apps/${app.id}/keys`, 'POST', { name: 'pub', capability: { '*': ['*'] } }))
  return { appId: app.id, key: key.key }
}

async function newQueue(appId: string, name: string, ttl: number, maxLength: number) {
  const r = await v1(`/apps/${appId}/queues`, 'POST', { name, ttl, maxLength })
  expect(r.status).toBe(201)
  return body(r)
}

async function routeInto(appId: string, queueId: string, channelFilter: string) {
  const r = await v1(`/apps/${appId}/rules`, 'POST', {
    ruleType: 'amqp',
    source: { channelFilter },
    target: { queueId },
  })
  expect(r.status).toBe(201)
  return body(r)
}

const publish = (key: string, channel: string, message: unknown) =>
  gw.request(`/channels/${encodeURIComponent(channel)}/messages`, { method: 'POST', json: message, key })

/** The vhost of an app's queues (each app has its own). */
const vhostOf = (queueName: string) => `app.${queueName.slice(0, queueName.lastIndexOf(':'))}`
const adminOf = new Map<string, Promise<ChannelModel>>()
/** The administrator's connection to a vhost. */
function adminIn(vhost: string): Promise<ChannelModel> {
  let c = adminOf.get(vhost)
  if (!c) {
    c = connect(`${ADMIN_URL}/${encodeURIComponent(vhost)}`).then((m) => {
      m.on('error', () => {})
      m.on('close', () => adminOf.delete(vhost))
      return m
    })
    c.catch(() => adminOf.delete(vhost))
    adminOf.set(vhost, c)
  }
  return c
}

/** Ready messages of a queue in its app's vhost (undefined: there is no such queue, or no such vhost). */
async function readyCount(queueName: string): Promise<number | undefined> {
  let ch: Channel
  try {
    ch = await (await adminIn(vhostOf(queueName))).createChannel()
  } catch {
    // the vhost is gone (its connection closed with it, or it opens no more)
    adminOf.delete(vhostOf(queueName))
    try {
      ch = await (await adminIn(vhostOf(queueName))).createChannel()
    } catch {
      return undefined
    }
  }
  ch.on('error', () => {})
  try {
    return (await ch.checkQueue(queueName)).messageCount
  } catch (e) {
    if ((e as { code?: number }).code === 404) return undefined
    throw e
  } finally {
    await closeQuietly(ch)
  }
}

/** A local port nothing listens on. */
async function deadPort(): Promise<number> {
  const s = createServer()
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))
  const port = (s.address() as { port: number }).port
  await new Promise<void>((resolve) => s.close(() => resolve()))
  return port
}

/** A GET of RabbitMQ's management API (as the broker's administrator). */
const rabbit = (path: string) => fetch(`${MANAGEMENT}${path}`, { headers: { authorization: MANAGEMENT_AUTH } })

const envelope = (m: ConsumeMessage) => JSON.parse(m.content.toString()) as any

/** A sample of this process's metrics (0 when absent). */
function metric(name: string, labels: string): number {
  const line = metrics
    .render()
    .split('\n')
    .find((l) => l.startsWith(`${name}${labels} `))
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : 0
}

describe.skipIf(!HAVE)('queues on RabbitMQ (AMQP_URL)', () => {
  beforeAll(async () => {
    admin = await connect(ADMIN_URL)
    admin.on('error', () => {})
    proxy = await TcpProxy.start(5672)
    gw = await createTestGateway({
      amqpUrl: `amqp://guest:guest@127.0.0.1:${proxy.port}`,
      amqpManagementUrl: 'http://guest:guest@127.0.0.1:15672',
      amqpPublicUrl: 'amqp://127.0.0.1:5672',
    })
  })

  afterAll(async () => {
    closeClients()
    await stale?.gw.close()
    await stale?.proxy.stop()
    for (const c of consumers) await closeQuietly(c)
    await gw?.close()
    await proxy?.stop()
    for (const c of adminOf.values()) {
      const m = await c.catch(() => undefined)
      if (m) await closeQuietly(m)
    }
    // what a failed test left behind: the apps' vhosts (with their queues), consumer users, and
    // queues in the shared vhost (an earlier layout's)
    const shared = (await (await rabbit('/queues/%2F?columns=name')).json()) as Array<{ name: string }>
    for (const appId of [...apps, ...(stale ? [APP_ID] : [])]) {
      for (const q of shared)
        if (q.name.startsWith(`${appId}:`))
          await fetch(`${MANAGEMENT}/queues/%2F/${encodeURIComponent(q.name)}`, {
            method: 'DELETE',
            headers: { authorization: MANAGEMENT_AUTH },
          })
      for (const what of ['users', 'vhosts'])
        await fetch(`${MANAGEMENT}/${what}/${encodeURIComponent(`app.${appId}`)}`, {
          method: 'DELETE',
          headers: { authorization: MANAGEMENT_AUTH },
        })
    }
    if (admin) await closeQuietly(admin)
  })

  let ttlQueue: { name: string; publishedAt: number } | undefined
  /** A node whose broker is away while its one message outlives its queue's ttl (checked by the last test). */
  let stale: { gw: TestGateway; proxy: TcpProxy; queueName: string; publishedAt: number } | undefined

  test('a rule routes channel messages into the app queue; a consumer with the handed-out credentials reads the envelope and acks', async () => {
    const { appId, key } = await newApp()
    const q = await newQueue(appId, 'orders', 1, 100)
    expect(q).toMatchObject({ name: 'orders', ttl: 1, maxLength: 100, state: 'Running' })
    expect(q.amqp.queueName).toBe(`${appId}:orders`)
    expect(q.amqp.uri).toStartWith(`amqp://app.${appId}:`)
    // the app's own vhost
    expect(q.amqp.uri).toEndWith(`@127.0.0.1:5672/app.${appId}`)
    // STOMP is not served: the record does not advertise it (the hosted record has a stomp block)
    expect(q).not.toHaveProperty('stomp')

    // declared durable with the queue's bounds (the broker's own view)
    const info = await waitFor(
      async () =>
        (await fetch(
          `${MANAGEMENT}/queues/${encodeURIComponent(`app.${appId}`)}/${encodeURIComponent(q.amqp.queueName)}`,
          {
            headers: { authorization: MANAGEMENT_AUTH },
          },
        )) as Response,
      (r) => r.status === 200,
    )
    expect(await info.json()).toMatchObject({
      durable: true,
      arguments: { 'x-message-ttl': 60_000, 'x-max-length': 100, 'x-overflow': 'drop-head' },
    })

    const rule = await routeInto(appId, q.id, '^orders:')
    expect((await publish(key, 'orders:1', { name: 'created', data: { n: 1 } })).status).toBe(201)
    expect((await publish(key, 'elsewhere', { name: 'ignored', data: 'x' })).status).toBe(201)

    const { ch, got } = await consume(q.amqp.uri, q.amqp.queueName, consumers)
    const [m] = await waitFor(
      () => got,
      (g) => g.length >= 1,
    )
    expect(envelope(m!)).toMatchObject({
      source: 'channel.message',
      appId,
      channel: 'orders:1',
      ruleId: rule.id,
      site: expect.any(String),
      // JSON data travels as the channel holds it: a string with its encoding
      messages: [
        { name: 'created', data: '{"n":1}', encoding: 'json', id: expect.any(String), timestamp: expect.any(Number) },
      ],
    })
    expect(m!.properties.contentType).toBe('application/json')
    expect(m!.properties.deliveryMode).toBe(2)
    expect(m!.properties.messageId).toBe(`${rule.id}:${envelope(m!).messages[0].id}`)
    expect(m!.properties.headers).toMatchObject({
      'x-ably-envelope-channel': 'orders:1',
      'x-ably-envelope-rule-id': rule.id,
    })
    ch.ack(m!)
    await Bun.sleep(200)
    expect(got.length).toBe(1) // the unmatched channel sent nothing
    await waitFor(
      () => readyCount(q.amqp.queueName),
      (n) => n === 0,
    )

    // the record lists the same connection details; the HTTP consumer is not offered for broker queues
    const listed = (await body(await v1(`/apps/${appId}/queues`)))[0]
    expect(listed.amqp).toEqual(q.amqp)
    expect(listed).not.toHaveProperty('stomp')
    expect((await v1(`/apps/${appId}/queues/${encodeURIComponent(q.id)}/messages`, 'POST')).status).toBe(400)

    // consumers only read: they cannot declare or publish
    const conn = await connect(q.amqp.uri)
    consumers.push(conn)
    conn.on('error', () => {})
    const probe = await conn.createChannel()
    probe.on('error', () => {})
    await expect(probe.assertQueue(`${appId}:mine`)).rejects.toMatchObject({ code: 403 })
  })

  test('a channel.presence rule delivers enter, update and leave in the hosted presence envelope (both wire formats)', async () => {
    const { appId, key } = await newApp()
    const q = await newQueue(appId, 'members', 5, 100)
    const r = await v1(`/apps/${appId}/rules`, 'POST', {
      ruleType: 'amqp',
      source: { channelFilter: '^room:', type: 'channel.presence' },
      target: { queueId: q.id },
    })
    expect(r.status).toBe(201)
    const rule = await body(r)
    expect(rule.source).toEqual({ channelFilter: '^room:', type: 'channel.presence' })
    const port = Number(new URL(gw.listen()).port)
    const { ch, got } = await consume(q.amqp.uri, q.amqp.queueName, consumers)

    for (const [format, binary] of FORMATS) {
      const clientId = `member-${format}`
      const client = await connectedClient(port, { key, clientId }, binary)
      const room = client.channels.get(`room:${format}`)
      await room.presence.enter(binary ? new Uint8Array([1, 2, 3]) : { joined: true })
      await room.presence.update('typing')
      // a message on the channel is not a presence event: this rule does not route it
      await room.publish('chat', 'hello')
      await room.presence.leave()
      const envelopes = await waitFor(
        () => got.filter((m) => envelope(m).channel === `room:${format}`),
        (g) => g.length >= 3,
      )
      const [enter, update, leave] = envelopes.map(envelope)
      expect(enter).toEqual({
        source: 'channel.presence',
        appId,
        channel: `room:${format}`,
        site: expect.any(String),
        ruleId: rule.id,
        presence: [
          {
            id: expect.any(String),
            action: 2,
            clientId,
            connectionId: client.connection.id,
            timestamp: expect.any(Number),
            ...(binary ? { data: 'AQID', encoding: 'base64' } : { data: '{"joined":true}', encoding: 'json' }),
          },
        ],
      })
      expect(update.presence).toEqual([expect.objectContaining({ action: 4, clientId, data: 'typing' })])
      expect(leave.presence).toEqual([expect.objectContaining({ action: 3, clientId })])
      expect(envelopes[0]!.properties.headers).toMatchObject({
        'x-ably-envelope-source': 'channel.presence',
        'x-ably-envelope-channel': `room:${format}`,
        'x-ably-envelope-rule-id': rule.id,
      })
      expect(envelopes[0]!.properties.messageId).toBe(`${rule.id}:${enter.presence[0].id}`)
      for (const m of envelopes) ch.ack(m)
      client.close()
    }
    // a leave the server makes (the member's connection closed) is routed too
    const gone = await connectedClient(port, { key, clientId: 'closer' }, false)
    await gone.channels.get('room:closed').presence.enter()
    gone.close()
    const closed = await waitFor(
      () => got.filter((m) => envelope(m).channel === 'room:closed').map((m) => envelope(m).presence[0]),
      (g) => g.length >= 2,
    )
    expect(closed.map((p) => [p.action, p.clientId])).toEqual([
      [2, 'closer'],
      [3, 'closer'],
    ])
    await Bun.sleep(300)
    // three per client and two for the closed one, none for the messages
    expect(got.length).toBe(8)
    expect(got.every((m) => envelope(m).source === 'channel.presence')).toBe(true)

    // presence rules go to app queues on RabbitMQ only; other sources are refused as such
    const refused = async (ruleType: string, type: string, target: Record<string, unknown>) => {
      const res = await v1(`/apps/${appId}/rules`, 'POST', { ruleType, source: { channelFilter: '', type }, target })
      expect(res.status).toBe(400)
      return (await body(res)).error.message as string
    }
    expect(await refused('http', 'channel.presence', { url: 'http://127.0.0.1:9/x' })).toContain('channel.presence')
    expect(await refused('amqp', 'channel.lifecycle', { queueId: q.id })).toContain('source.type')
    expect(await refused('amqp', 'channel.occupancy', { queueId: q.id })).toContain('source.type')
  })

  test('maxLength holds (the oldest are dropped) and the ttl is the broker queue ttl', async () => {
    const { appId, key } = await newApp()
    const q = await newQueue(appId, 'bounded', 1, 3)
    await routeInto(appId, q.id, '^bounded$')
    for (let i = 1; i <= 6; i++) expect((await publish(key, 'bounded', { name: 'n', data: `m${i}` })).status).toBe(201)
    await waitFor(
      () => readyCount(q.amqp.queueName),
      (n) => n === 3,
    )
    await Bun.sleep(300)
    expect(await readyCount(q.amqp.queueName)).toBe(3)
    const { ch, got } = await consume(q.amqp.uri, q.amqp.queueName, consumers)
    await waitFor(
      () => got,
      (g) => g.length === 3,
    )
    expect(got.map((m) => envelope(m).messages[0].data)).toEqual(['m4', 'm5', 'm6'])
    for (const m of got) ch.ack(m)
    await ch.close()

    // one more left unread: the last test checks that it expired after its minute
    expect((await publish(key, 'bounded', { name: 'n', data: 'expires' })).status).toBe(201)
    await waitFor(
      () => readyCount(q.amqp.queueName),
      (n) => n === 1,
    )
    ttlQueue = { name: q.amqp.queueName, publishedAt: Date.now() }

    // a second node, its broker away: a message routed now waits in its buffer past the ttl
    const staleProxy = await TcpProxy.start(await deadPort())
    const staleGw = await createTestGateway({
      amqpUrl: `amqp://guest:guest@127.0.0.1:${staleProxy.port}`,
      amqpManagementUrl: 'http://guest:guest@127.0.0.1:15672',
    })
    const name = `stale${Date.now().toString(36)}`
    const now = Date.now()
    const queue = {
      id: `${APP_ID}:local:${name}`,
      appId: APP_ID,
      name,
      region: 'local',
      ttl: 1,
      maxLength: 10,
      created: now,
    }
    // its consumer user exists, as when a node that reached the broker created the queue
    await fetch(`${MANAGEMENT}/users/${encodeURIComponent(`app.${APP_ID}`)}`, {
      method: 'PUT',
      headers: { authorization: MANAGEMENT_AUTH, 'content-type': 'application/json' },
      body: JSON.stringify({ password: 'unused', tags: '' }),
    })
    await staleGw.backend.control.putQueue(queue)
    await staleGw.backend.control.putRule({
      id: name,
      appId: APP_ID,
      ruleType: 'amqp',
      requestMode: 'single',
      status: 'enabled',
      source: { channelFilter: `^${name}$`, type: 'channel.message' },
      target: { queueId: queue.id },
      created: now,
      modified: now,
    })
    stale = { gw: staleGw, proxy: staleProxy, queueName: `${APP_ID}:${name}`, publishedAt: Date.now() }
    const sent = await staleGw.request(`/channels/${name}/messages`, { method: 'POST', json: { data: 'too late' } })
    expect(sent.status).toBe(201)
  })

  test("another app's credentials cannot read the queue; wrong credentials cannot connect", async () => {
    const a = await newApp()
    const qa = await newQueue(a.appId, 'private', 5, 10)
    const b = await newApp()
    const qb = await newQueue(b.appId, 'own', 5, 10)
    expect(qb.amqp.uri).not.toBe(qa.amqp.uri)

    const conn = await connect(qb.amqp.uri)
    consumers.push(conn)
    conn.on('error', () => {})
    // its own queue: yes
    const own = await conn.createChannel()
    own.on('error', () => {})
    await own.checkQueue(qb.amqp.queueName)
    // the other app's queue: ACCESS_REFUSED (403; its own vhost has none of that name either)
    const other: Channel = await conn.createChannel()
    other.on('error', () => {})
    await expect(other.consume(qa.amqp.queueName, () => {})).rejects.toMatchObject({ code: 403 })
    const other2 = await conn.createChannel()
    other2.on('error', () => {})
    await expect(other2.get(qa.amqp.queueName)).rejects.toMatchObject({ fields: { replyCode: 403 } })

    // A's user with a wrong password
    const wrong = new URL(qa.amqp.uri)
    wrong.password = 'not-the-password'
    await expect(connect(wrong.toString())).rejects.toThrow(/ACCESS[-_]REFUSED/)
  })

  test("another app's credentials learn nothing of a queue: a passive declare finds none, its vhost does not open", async () => {
    const a = await newApp()
    const qa = await newQueue(a.appId, 'secret', 5, 10)
    await routeInto(a.appId, qa.id, '^secret$')
    const delivered = metric('gateway_queue_deliveries_total', '{outcome="delivered"}')
    for (let i = 0; i < 3; i++) expect((await publish(a.key, 'secret', { data: `s${i}` })).status).toBe(201)
    await waitFor(
      () => metric('gateway_queue_deliveries_total', '{outcome="delivered"}') - delivered,
      (n) => n === 3,
    )
    const b = await newApp()
    const qb = await newQueue(b.appId, 'mine', 5, 10)
    const conn = await connect(qb.amqp.uri)
    consumers.push(conn)
    conn.on('error', () => {})
    const probe = async () => {
      const ch = await conn.createChannel()
      ch.on('error', () => {})
      return ch
    }
    expect((await (await probe()).checkQueue(qb.amqp.queueName)).messageCount).toBe(0)
    // RabbitMQ checks no permission for a passive declare: in a vhost of both apps it answered
    // A's message and consumer counts to B; in B's vhost there is no such queue
    await expect((await probe()).checkQueue(qa.amqp.queueName)).rejects.toMatchObject({ code: 404 })
    // B's credentials open neither A's vhost nor the broker's default one
    const as = (vhost: string) => {
      const u = new URL(qb.amqp.uri)
      u.pathname = `/${encodeURIComponent(vhost)}`
      return u.toString()
    }
    await expect(connect(as(`app.${a.appId}`))).rejects.toThrow()
    await expect(connect(as('/'))).rejects.toThrow()
    // nothing of either app is left in the shared vhost
    const shared = (await (await rabbit('/queues/%2F?columns=name')).json()) as Array<{ name: string }>
    expect(shared.filter((q) => q.name.startsWith(`${a.appId}:`) || q.name.startsWith(`${b.appId}:`))).toEqual([])
    expect((await rabbit(`/permissions/%2F/${encodeURIComponent(`app.${b.appId}`)}`)).status).toBe(404)
  })

  test('an earlier layout (every app in the shared vhost) is moved at start: queues with their messages, permissions, connections', async () => {
    // what an earlier version made for an app of this deployment: its queue in the shared vhost
    // with 3 messages and its user reading it there, a consumer connected
    const dir = mkdtempSync(join(tmpdir(), 'gw-earlier-'))
    const earlierNode = await createTestGateway({ dataDir: dir })
    const appId = `earlier${Date.now().toString(36)}`
    apps.push(appId)
    await addApp(earlierNode, appId)
    const now = Date.now()
    await earlierNode.backend.control.putQueue({
      id: `${appId}:local:old`,
      appId,
      name: 'old',
      region: 'local',
      ttl: 10,
      maxLength: 50,
      created: now,
    })
    // the consumer password every version derives from the store's secret
    const password = encodeURIComponent(
      hmacSha256(await earlierNode.backend.control.secret(), `amqp-consumer:${appId}`, 'base64url'),
    )
    await earlierNode.close()
    const name = `${appId}:old`
    const setup = await admin.createChannel()
    await setup.assertQueue(name, {
      durable: true,
      arguments: { 'x-message-ttl': 600_000, 'x-max-length': 50, 'x-overflow': 'drop-head' },
    })
    for (let i = 1; i <= 3; i++)
      setup.sendToQueue(name, Buffer.from(`{"n":${i}}`), {
        persistent: true,
        messageId: `earlier:${i}`,
        headers: { 'x-ably-envelope-appid': appId },
      })
    // and a queue of an app this deployment does not know: left alone
    const foreign = `foreign${now.toString(36)}:q`
    await setup.assertQueue(foreign, { durable: false, autoDelete: false })
    const put = (path: string, json: unknown) =>
      fetch(`${MANAGEMENT}${path}`, {
        method: 'PUT',
        headers: { authorization: MANAGEMENT_AUTH, 'content-type': 'application/json' },
        body: JSON.stringify(json),
      })
    const user = `app.${appId}`
    await put(`/users/${encodeURIComponent(user)}`, { password: decodeURIComponent(password), tags: '' })
    await put(`/permissions/%2F/${encodeURIComponent(user)}`, { configure: '^$', write: '^$', read: `^${appId}:` })
    const earlier = await connect(`amqp://${encodeURIComponent(user)}:${password}@127.0.0.1:5672`)
    earlier.on('error', () => {})
    let earlierClosed = false
    earlier.on('close', () => (earlierClosed = true))
    // before: the earlier layout leaks (a passive declare reads the counts), as the issue found
    expect((await (await earlier.createChannel()).checkQueue(name)).messageCount).toBe(3)

    // a node of this version starts
    const gw2 = await createTestGateway({
      dataDir: dir,
      amqpUrl: ADMIN_URL,
      amqpManagementUrl: 'http://guest:guest@127.0.0.1:15672',
      amqpPublicUrl: 'amqp://127.0.0.1:5672',
    })
    try {
      await waitFor(
        () => readyCount(name),
        (n) => n === 3,
      )
      await waitFor(
        async () => (await rabbit(`/queues/%2F/${encodeURIComponent(name)}`)).status,
        (st) => st === 404,
      )
      expect(earlierClosed).toBe(true)
      expect((await rabbit(`/permissions/%2F/${encodeURIComponent(user)}`)).status).toBe(404)
      expect((await rabbit(`/queues/%2F/${encodeURIComponent(foreign)}`)).status).toBe(200)
      // the record's credentials (the same user and password, now with its vhost) read the moved messages
      const record = (
        await body(
          await gw2.request(`/v1/apps/${appId}/queues`, {
            key: null,
            headers: { authorization: `Bearer ${ACCESS_TOKEN}` },
          }),
        )
      )[0]
      expect(record.amqp.uri).toEndWith(`/app.${appId}`)
      const { ch, got } = await consume(record.amqp.uri, name, consumers)
      await waitFor(
        () => got.length,
        (n) => n === 3,
      )
      expect(got.map((m) => [m.content.toString(), m.properties.messageId, m.properties.deliveryMode])).toEqual([
        ['{"n":1}', 'earlier:1', 2],
        ['{"n":2}', 'earlier:2', 2],
        ['{"n":3}', 'earlier:3', 2],
      ])
      for (const m of got) ch.ack(m)
      // the earlier URI (the shared vhost) opens nothing any more
      await expect(connect(`amqp://${encodeURIComponent(user)}:${password}@127.0.0.1:5672`)).rejects.toThrow()
    } finally {
      await gw2.close()
      await setup.deleteQueue(foreign).catch(() => {})
      await closeQuietly(setup)
      await closeQuietly(earlier)
      rmSync(dir, { recursive: true, force: true })
    }
  })

  test('deleting a queue deletes it in RabbitMQ, with its messages', async () => {
    const { appId, key } = await newApp()
    const q = await newQueue(appId, 'doomed', 1, 10)
    const kept = await newQueue(appId, 'kept', 1, 10)
    await routeInto(appId, q.id, '^doomed$')
    expect((await publish(key, 'doomed', { name: 'n', data: 'waiting' })).status).toBe(201)
    await waitFor(
      () => readyCount(q.amqp.queueName),
      (n) => n === 1,
    )
    expect((await v1(`/apps/${appId}/queues/${encodeURIComponent(q.id)}`, 'DELETE')).status).toBe(204)
    expect(await readyCount(q.amqp.queueName)).toBeUndefined()
    expect((await body(await v1(`/apps/${appId}/queues`))).map((x: { id: string }) => x.id)).toEqual([kept.id])
    // the app's other queue and its consumer user stay
    expect(await readyCount(kept.amqp.queueName)).toBe(0)
    expect((await rabbit(`/users/${encodeURIComponent(`app.${appId}`)}`)).status).toBe(200)
  })

  test('deleting an app deletes its queues, its consumer user and its permissions in RabbitMQ', async () => {
    const { appId, key } = await newApp()
    const a = await newQueue(appId, 'first', 1, 10)
    const b = await newQueue(appId, 'second', 1, 10)
    await routeInto(appId, a.id, '^first$')
    expect((await publish(key, 'first', { name: 'n', data: 'left unread' })).status).toBe(201)
    await waitFor(
      () => readyCount(a.amqp.queueName),
      (n) => n === 1,
    )
    const user = encodeURIComponent(`app.${appId}`)
    expect((await rabbit(`/users/${user}`)).status).toBe(200)
    expect((await rabbit(`/permissions/${user}/${user}`)).status).toBe(200)
    const conn = await connect(a.amqp.uri)
    consumers.push(conn)
    conn.on('error', () => {})

    expect((await v1(`/apps/${appId}`, 'DELETE')).status).toBe(204)
    expect(await readyCount(a.amqp.queueName)).toBeUndefined()
    expect(await readyCount(b.amqp.queueName)).toBeUndefined()
    expect((await rabbit(`/users/${user}`)).status).toBe(404)
    expect((await rabbit(`/vhosts/${user}`)).status).toBe(404)
    expect((await rabbit(`/permissions/${user}/${user}`)).status).toBe(404)
    // the credentials the records handed out open nothing any more
    await expect(connect(a.amqp.uri)).rejects.toThrow(/ACCESS[-_]REFUSED/)
    expect((await v1(`/apps/${appId}/queues`)).status).toBe(404)
  })

  test('RabbitMQ unreachable: channel publishes still answer 201, rule deliveries resume once it is back, nothing acked comes again', async () => {
    const { appId, key } = await newApp()
    const q = await newQueue(appId, 'resilient', 10, 1000)
    await routeInto(appId, q.id, '^resilient$')
    const { ch, got } = await consume(q.amqp.uri, q.amqp.queueName, consumers)
    const acked = (n: number) =>
      waitFor(
        () => {
          for (const m of got.splice(0)) {
            seen.push(envelope(m).messages[0].data)
            ch.ack(m)
          }
          return seen.length
        },
        (len) => len >= n,
      )
    const seen: unknown[] = []
    expect((await publish(key, 'resilient', { name: 'n', data: 'before' })).status).toBe(201)
    await acked(1)

    const upstream = proxy.target
    proxy.target = await deadPort()
    proxy.cutAll()
    for (let i = 1; i <= 5; i++)
      expect((await publish(key, 'resilient', { name: 'n', data: `down${i}` })).status).toBe(201)
    // managing queues needs the broker: refused as unavailable, not hung
    expect((await v1(`/apps/${appId}/queues`, 'POST', { name: 'later', ttl: 1, maxLength: 1 })).status).toBe(503)
    await Bun.sleep(300)
    expect(got.length).toBe(0)

    const delivered = metric('gateway_queue_deliveries_total', '{outcome="delivered"}')
    proxy.target = upstream
    await acked(6)
    // counted once confirmed (a consumer may have them before the publisher's confirm arrives)
    await waitFor(
      () => metric('gateway_queue_deliveries_total', '{outcome="delivered"}') - delivered,
      (n) => n >= 5,
    )
    expect((await publish(key, 'resilient', { name: 'n', data: 'after' })).status).toBe(201)
    await acked(7)
    await Bun.sleep(500)
    for (const m of got.splice(0)) seen.push(envelope(m).messages[0].data)
    expect(seen).toEqual(['before', 'down1', 'down2', 'down3', 'down4', 'down5', 'after'])
  })

  test('a queue deleted while the broker stopped answering answers 503 (not a wait for the heartbeat), and stays listed', async () => {
    const silent = await TcpProxy.start(5672)
    const gw2 = await createTestGateway({
      amqpUrl: `amqp://guest:guest@127.0.0.1:${silent.port}`,
      amqpManagementUrl: 'http://guest:guest@127.0.0.1:15672',
      amqpPublicUrl: 'amqp://127.0.0.1:5672',
    })
    try {
      const v2 = managementOf(gw2)
      const { appId } = await newApp(v2)
      const created = await v2(`/apps/${appId}/queues`, 'POST', { name: 'silent', ttl: 1, maxLength: 10 })
      expect(created.status).toBe(201)
      const q = await body(created)
      // the app's connection to the broker stays open, and nothing the broker sends on it arrives
      silent.dropReplies()
      const deleted = await v2(`/apps/${appId}/queues/${q.id}`, 'DELETE')
      expect(deleted.status).toBe(503)
      expect((await body(deleted)).error.code).toBe(50003)
      const listed = (await body(await v2(`/apps/${appId}/queues`))) as Array<{ id: string }>
      expect(listed.map((x) => x.id)).toContain(q.id)
    } finally {
      await gw2.close()
      await silent.stop()
    }
  }, 30_000)

  test("one account flooding the buffer during an outage loses its own oldest messages, never another account's", async () => {
    // the issue's reproduction, scaled down: a node holding 1,000, RabbitMQ away, account A routes
    // 3,000 messages into its queue, then account B publishes 100
    const BUFFER = 1000
    const FLOOD = 3000
    const outage = await TcpProxy.start(5672)
    const gw2 = await createTestGateway({
      amqpUrl: `amqp://guest:guest@127.0.0.1:${outage.port}`,
      amqpManagementUrl: 'http://guest:guest@127.0.0.1:15672',
      amqpPublicUrl: 'amqp://127.0.0.1:5672',
      amqpBufferMessages: BUFFER,
    })
    const v2 = (path: string, token: string, method = 'GET', json?: unknown) =>
      gw2.request(`/v1${path}`, { method, json, key: null, headers: { authorization: `Bearer ${token}` } })
    /** A new account (as the operator makes one) with an app, a key, a queue and a rule routing `flood` into it. */
    const tenant = async (name: string) => {
      const made = await body(await v2('/accounts', ACCESS_TOKEN, 'POST', { name }))
      const token = made.accessToken as string
      const app = await body(await v2(`/accounts/${made.account.id}/apps`, token, 'POST', { name }))
      apps.push(app.id)
      const key = (
        await body(await v2(`/apps/${app.id}/keys`, token, 'POST', { name: 'k', capability: { '*': ['*'] } }))
      ).key as string
      const created = await v2(`/apps/${app.id}/queues`, token, 'POST', { name: 'flood', ttl: 10, maxLength: 100_000 })
      expect(created.status).toBe(201)
      const q = await body(created)
      const rule = { ruleType: 'amqp', source: { channelFilter: '^flood$' }, target: { queueId: q.id } }
      expect((await v2(`/apps/${app.id}/rules`, token, 'POST', rule)).status).toBe(201)
      return { appId: app.id as string, key, q }
    }
    const stats = async (key: string) => {
      const records = (await (await gw2.request('/stats?unit=minute&limit=10', { key })).json()) as Array<{
        entries: Record<string, number>
      }>
      const sum: Record<string, number> = {}
      for (const r of records) for (const [k, n] of Object.entries(r.entries)) sum[k] = (sum[k] ?? 0) + n
      return sum
    }
    try {
      const a = await tenant('flooder')
      const b = await tenant('bystander')
      const { ch, got } = await consume(b.q.amqp.uri, b.q.amqp.queueName, consumers)
      const full = metric('gateway_queue_dropped_total', '{reason="full"}')

      outage.target = await deadPort()
      outage.cutAll()
      for (let i = 0; i < FLOOD; i += 100) {
        const batch = Array.from({ length: 100 }, (_, j) => ({ name: 'a', data: `a${i + j}` }))
        expect(
          (await gw2.request('/channels/flood/messages', { method: 'POST', json: batch, key: a.key })).status,
        ).toBe(201)
      }
      for (let i = 0; i < 100; i++)
        expect(
          (await gw2.request('/channels/flood/messages', { method: 'POST', json: { data: `b${i}` }, key: b.key }))
            .status,
        ).toBe(201)
      // A's overflow, then one of A's oldest for each of B's
      await waitFor(
        () => metric('gateway_queue_dropped_total', '{reason="full"}') - full,
        (n) => n === FLOOD - BUFFER + 100,
      )

      outage.target = 5672
      const seen = await waitFor(
        () => got.map((m) => envelope(m).messages[0].data as string),
        (g) => g.length >= 100,
        30_000,
      )
      expect(seen).toEqual(Array.from({ length: 100 }, (_, i) => `b${i}`))
      for (const m of got) ch.ack(m)
      // A keeps its newest: what the node held once B's took their places
      await waitFor(
        () => readyCount(a.q.amqp.queueName),
        (n) => n === BUFFER - 100,
        30_000,
      )
      // each app's stats say what its queue took and what was given up
      await waitFor(
        () => stats(b.key),
        (e) => e['messages.outbound.sharedQueue.messages.count'] === 100,
      )
      const sa = await waitFor(
        () => stats(a.key),
        (e) => e['messages.outbound.sharedQueue.messages.count'] === BUFFER - 100,
      )
      expect(sa['messages.outbound.sharedQueue.messages.failed']).toBe(FLOOD - BUFFER + 100)
      expect((await stats(b.key))['messages.outbound.sharedQueue.messages.failed']).toBeUndefined()
    } finally {
      await gw2.close()
      await outage.stop()
    }
  }, 60_000)

  test("a node's connection to an app's vhost is closed once idle, and opened again for the next message", async () => {
    const gw2 = await createTestGateway({
      amqpUrl: ADMIN_URL,
      amqpManagementUrl: 'http://guest:guest@127.0.0.1:15672',
      amqpPublicUrl: 'amqp://127.0.0.1:5672',
      // long enough for the management API to list the connection (it samples every 5 s)
      amqpIdleConnectionMs: 6000,
    })
    try {
      const v2 = managementOf(gw2)
      const { appId, key } = await newApp(v2)
      const q = await body(await v2(`/apps/${appId}/queues`, 'POST', { name: 'q', ttl: 1, maxLength: 10 }))
      const rule = { ruleType: 'amqp', source: { channelFilter: '^idle$' }, target: { queueId: q.id } }
      expect((await v2(`/apps/${appId}/rules`, 'POST', rule)).status).toBe(201)
      const { ch, got } = await consume(q.amqp.uri, q.amqp.queueName, consumers)
      /** The gateway's connections (guest's) to the app's vhost, as the management API lists them. */
      const gatewayConnections = async () =>
        (
          (await (await rabbit(`/vhosts/${encodeURIComponent(`app.${appId}`)}/connections`)).json()) as Array<{
            user: string
          }>
        ).filter((c) => c.user === 'guest').length
      const send = async (data: string) =>
        expect((await gw2.request('/channels/idle/messages', { method: 'POST', json: { data }, key })).status).toBe(201)
      await send('first')
      await waitFor(
        () => got.length,
        (n) => n === 1,
      )
      await waitFor(gatewayConnections, (n) => n === 1, 30_000)
      await waitFor(gatewayConnections, (n) => n === 0, 30_000)
      await send('second')
      await waitFor(
        () => got.length,
        (n) => n === 2,
      )
      expect(got.map((m) => envelope(m).messages[0].data)).toEqual(['first', 'second'])
      for (const m of got) ch.ack(m)
    } finally {
      await gw2.close()
    }
  }, 90_000)

  test("a node's buffer is bounded: beyond it deliveries are dropped and counted, publishes still answer 201", async () => {
    // a second node whose broker never answers, holding at most 2 messages
    const gw2 = await createTestGateway({
      amqpUrl: `amqp://guest:guest@127.0.0.1:${await deadPort()}`,
      amqpManagementUrl: `http://guest:guest@127.0.0.1:${await deadPort()}`,
      amqpBufferMessages: 2,
    })
    try {
      const now = Date.now()
      const queue = {
        id: `${APP_ID}:local:q`,
        appId: APP_ID,
        name: 'q',
        region: 'local',
        ttl: 1,
        maxLength: 10,
        created: now,
      }
      await gw2.backend.control.putQueue(queue)
      await gw2.backend.control.putRule({
        id: 'bounded',
        appId: APP_ID,
        ruleType: 'amqp',
        requestMode: 'single',
        status: 'enabled',
        source: { channelFilter: '^full$', type: 'channel.message' },
        target: { queueId: queue.id },
        created: now,
        modified: now,
      })
      const full = metric('gateway_queue_dropped_total', '{reason="full"}')
      for (let i = 0; i < 5; i++)
        expect((await gw2.request('/channels/full/messages', { method: 'POST', json: { data: `x${i}` } })).status).toBe(
          201,
        )
      await waitFor(
        () => metric('gateway_queue_dropped_total', '{reason="full"}') - full,
        (n) => n === 3,
      )
      expect(metric('gateway_queue_buffered', '')).toBeGreaterThanOrEqual(2)
    } finally {
      await gw2.close()
    }
  })

  test('broker away: deleting an app with queues answers 503 and keeps it; an app without queues is deleted', async () => {
    const gw2 = await createTestGateway({ amqpUrl: `amqp://guest:guest@127.0.0.1:${await deadPort()}` })
    try {
      const v2 = managementOf(gw2)
      const now = Date.now()
      await gw2.backend.control.putQueue({
        id: `${APP_ID}:local:kept`,
        appId: APP_ID,
        name: 'kept',
        region: 'local',
        ttl: 1,
        maxLength: 10,
        created: now,
      })
      expect((await v2(`/apps/${APP_ID}`, 'DELETE')).status).toBe(503)
      expect((await v2(`/apps/${APP_ID}/keys`)).status).toBe(200)
      const accountId = (await body(await v2('/me'))).account.id
      const empty = await body(await v2(`/accounts/${accountId}/apps`, 'POST', { name: 'no-queues' }))
      expect((await v2(`/apps/${empty.id}`, 'DELETE')).status).toBe(204)
      expect((await v2(`/apps/${empty.id}/keys`)).status).toBe(404)
    } finally {
      await gw2.close()
    }
  })

  test('an expired message is gone (the ttl of one minute, counted from its publish); one a node held past it is dropped unsent and counted', async () => {
    expect(ttlQueue).toBeDefined()
    const { name, publishedAt } = ttlQueue!
    await waitFor(
      () => readyCount(name),
      (n) => n === 0,
      Math.max(0, publishedAt + 60_000 - Date.now()) + 30_000,
    )
    expect(Date.now() - publishedAt).toBeGreaterThan(55_000)

    // the broker back after the ttl: the message the other node held is dropped unsent, and counted
    expect(stale).toBeDefined()
    const s = stale!
    await Bun.sleep(Math.max(0, s.publishedAt + 61_000 - Date.now()))
    const expired = metric('gateway_queue_dropped_total', '{reason="expired"}')
    s.proxy.target = 5672
    await waitFor(
      () => metric('gateway_queue_dropped_total', '{reason="expired"}') - expired,
      (n) => n >= 1,
    )
    // never sent: the queue holds nothing (not even declared: the pump drops it before that)
    expect((await readyCount(s.queueName)) ?? 0).toBe(0)
  }, 120_000)
})
