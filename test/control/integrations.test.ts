import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { waitFor } from '../helpers/wait'
import { ACCESS_TOKEN, APP_ID, TestClock, createTestGateway, type TestGateway } from '../helpers/gateway'

const clock = new TestClock()
let gw: TestGateway
beforeAll(async () => {
  gw = await createTestGateway({ webhookAllowPrivateTargets: true }, clock)
})
afterAll(async () => {
  await gw.close()
})

const v1 = (path: string, method = 'GET', json?: unknown) =>
  gw.request(`/v1${path}`, { method, json, key: null, headers: { authorization: `Bearer ${ACCESS_TOKEN}` } })
const body = async (r: Response) => (await r.json()) as any
const publish = (channel: string, data: unknown) =>
  gw.request(`/channels/${channel}/messages`, { method: 'POST', json: data })

describe('rules', () => {
  test('create, get, update, delete; invalid input is 400', async () => {
    const r = await v1(`/apps/${APP_ID}/rules`, 'POST', {
      ruleType: 'http',
      source: { channelFilter: '^orders:', type: 'channel.message' },
      target: { url: 'http://127.0.0.1:9/hook' },
    })
    expect(r.status).toBe(201)
    const rule = await body(r)
    expect(rule).toMatchObject({
      ruleType: 'http',
      requestMode: 'single',
      status: 'enabled',
      source: { channelFilter: '^orders:' },
    })
    expect((await body(await v1(`/apps/${APP_ID}/rules/${rule.id}`))).id).toBe(rule.id)
    expect((await body(await v1(`/apps/${APP_ID}/rules/${rule.id}`, 'PATCH', { status: 'disabled' }))).status).toBe(
      'disabled',
    )
    expect((await v1(`/apps/${APP_ID}/rules/${rule.id}`, 'DELETE')).status).toBe(204)
    expect((await v1(`/apps/${APP_ID}/rules/${rule.id}`)).status).toBe(404)
    for (const bad of [
      { ruleType: 'http', source: { channelFilter: '([unclosed' }, target: { url: 'http://x/' } },
      { ruleType: 'http', source: { channelFilter: '.*' }, target: { url: 'ftp://x/' } },
      { ruleType: 'kafka', source: { channelFilter: '.*' }, target: {} },
      { ruleType: 'amqp', source: { channelFilter: '.*' }, target: { queueId: 'nope' } },
      { ruleType: 'http', source: { channelFilter: '.*', type: 'channel.presence' }, target: { url: 'http://x/' } },
    ]) {
      const res = await v1(`/apps/${APP_ID}/rules`, 'POST', bad)
      expect(res.status).toBe(400)
      expect((await body(res)).error.code).toBe(40000)
    }
  })

  test('webhooks deliver matching messages in order per channel, retry after failures and lose nothing, without blocking publishes', async () => {
    const received: Array<{ channel: string; data: string }> = []
    let failuresLeft = 3
    const receiver = Bun.serve({
      port: 0,
      hostname: '127.0.0.1',
      async fetch(req) {
        const b = (await req.json()) as any
        if (failuresLeft-- > 0) return new Response('down', { status: 503 })
        for (const item of b.items)
          for (const m of item.data.messages) received.push({ channel: item.data.channelId, data: m.data })
        return new Response('ok')
      },
    })
    try {
      const rule = await body(
        await v1(`/apps/${APP_ID}/rules`, 'POST', {
          ruleType: 'http',
          requestMode: 'batch',
          source: { channelFilter: '^hook:', type: 'channel.message' },
          target: { url: `http://127.0.0.1:${receiver.port}/in`, headers: [{ name: 'x-secret', value: 's' }] },
        }),
      )
      const sent: Record<string, string[]> = { 'hook:a': [], 'hook:b': [] }
      for (let i = 0; i < 60; i++) {
        const ch = i % 3 ? 'hook:a' : 'hook:b'
        expect((await publish(ch, { data: `m${i}` })).status).toBe(201)
        sent[ch]!.push(`m${i}`)
      }
      expect((await publish('other', { data: 'not matched' })).status).toBe(201)
      await waitFor(
        () => received.length,
        (n) => n >= 60,
      )
      await Bun.sleep(100)
      for (const ch of Object.keys(sent))
        expect(received.filter((r) => r.channel === ch).map((r) => r.data)).toEqual(sent[ch]!)
      expect(received.some((r) => r.channel === 'other')).toBe(false)
      expect(failuresLeft).toBeLessThan(0)
      await v1(`/apps/${APP_ID}/rules/${rule.id}`, 'DELETE')
    } finally {
      receiver.stop(true)
    }
  })
})

describe('queues', () => {
  test('create, list with counts, route by an amqp rule, receive, redeliver unacknowledged, acknowledge, bound and expire', async () => {
    const created = await v1(`/apps/${APP_ID}/queues`, 'POST', { name: 'jobs', ttl: 1, maxLength: 5 })
    expect(created.status).toBe(201)
    const q = await body(created)
    expect(q).toMatchObject({ name: 'jobs', ttl: 1, maxLength: 5, messages: { total: 0 } })
    expect((await v1(`/apps/${APP_ID}/queues`, 'POST', { name: 'jobs', ttl: 1, maxLength: 5 })).status).toBe(409)
    expect((await v1(`/apps/${APP_ID}/queues`, 'POST', { name: 'x', ttl: 0, maxLength: 5 })).status).toBe(400)
    await v1(`/apps/${APP_ID}/rules`, 'POST', {
      ruleType: 'amqp',
      source: { channelFilter: '^work$' },
      target: { queueId: q.id },
    })

    for (let i = 0; i < 7; i++) expect((await publish('work', { data: `j${i}` })).status).toBe(201)
    const list = await waitFor(
      async () => (await body(await v1(`/apps/${APP_ID}/queues`)))[0],
      (x: any) => x.messages.total === 5,
    )
    expect(list.messages).toEqual({ ready: 5, unacknowledged: 0, total: 5 }) // maxLength 5: the two oldest were dropped

    const qid = encodeURIComponent(q.id)
    const first = await body(await v1(`/apps/${APP_ID}/queues/${qid}/messages?max=2&visibilityTimeout=5000`, 'POST'))
    expect(first.map((m: any) => m.message.data)).toEqual(['j2', 'j3'])
    expect(first[0].channel).toBe('work')
    const next = await body(await v1(`/apps/${APP_ID}/queues/${qid}/messages?max=10`, 'POST'))
    expect(next.map((m: any) => m.message.data)).toEqual(['j4', 'j5', 'j6'])
    expect((await body(await v1(`/apps/${APP_ID}/queues`)))[0].messages).toEqual({
      ready: 0,
      unacknowledged: 5,
      total: 5,
    })
    expect(
      (
        await body(
          await v1(`/apps/${APP_ID}/queues/${qid}/ack`, 'POST', { deliveryTags: next.map((m: any) => m.deliveryTag) }),
        )
      ).acknowledged,
    ).toBe(3)

    clock.advance(6000) // the two unacknowledged ones come back
    const again = await body(await v1(`/apps/${APP_ID}/queues/${qid}/messages?max=10`, 'POST'))
    expect(again.map((m: any) => [m.message.data, m.redelivered])).toEqual([
      ['j2', 1],
      ['j3', 1],
    ])

    clock.advance(61_000) // past the ttl (1 minute): expired
    expect(await body(await v1(`/apps/${APP_ID}/queues/${qid}/messages?max=10`, 'POST'))).toEqual([])
    expect((await v1(`/apps/${APP_ID}/queues/${qid}`, 'DELETE')).status).toBe(204)
    expect((await v1(`/apps/${APP_ID}/queues/${qid}/messages`, 'POST')).status).toBe(404)
  })

  test('concurrent pushes keep a bounded queue at exactly its bound, and deliveries are counted per message', async () => {
    const queues = gw.backend.queues
    const now = clock.now()
    const dropped = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        queues.push(
          'race',
          [
            { channel: 'c', message: { data: i } },
            { channel: 'c', message: { data: i } },
          ],
          5,
          now,
        ),
      ),
    )
    expect(dropped.reduce((a, b) => a + b, 0)).toBe(35)
    expect(await queues.counts('race', 60_000, now)).toEqual({ ready: 5, unacknowledged: 0, total: 5 })
    const first = await queues.receive('race', 2, 1000, 60_000, now)
    expect(first.map((m) => m.redelivered)).toEqual([0, 0])
    const again = await queues.receive('race', 10, 1000, 60_000, now + 2000)
    expect(again.map((m) => m.redelivered).sort()).toEqual([0, 0, 0, 1, 1]) // the order of redeliveries differs by backend
    expect(
      await queues.ack(
        'race',
        again.map((m) => m.deliveryTag),
      ),
    ).toBe(5)
    expect(await queues.counts('race', 60_000, now + 2000)).toEqual({ ready: 0, unacknowledged: 0, total: 0 })
    await queues.drop('race')
  })

  test("deleting an app drops its queues' messages; presence rules need queues on RabbitMQ", async () => {
    const accountId = (await body(await v1('/me'))).account.id
    const app = await body(await v1(`/accounts/${accountId}/apps`, 'POST', { name: 'short-lived' }))
    const key = (await body(await v1(`/apps/${app.id}/keys`, 'POST', { name: 'k', capability: { '*': ['*'] } }))).key
    const q = await body(await v1(`/apps/${app.id}/queues`, 'POST', { name: 'left', ttl: 5, maxLength: 10 }))
    const rule = { ruleType: 'amqp', source: { channelFilter: '^left$' }, target: { queueId: q.id } }
    expect((await v1(`/apps/${app.id}/rules`, 'POST', rule)).status).toBe(201)
    const presenceRule = { ...rule, source: { channelFilter: '', type: 'channel.presence' } }
    expect((await v1(`/apps/${app.id}/rules`, 'POST', presenceRule)).status).toBe(400)
    const sent = await gw.request('/channels/left/messages', { method: 'POST', json: { data: 'x' }, key })
    expect(sent.status).toBe(201)
    await waitFor(
      () => gw.backend.queues.counts(q.id, 300_000, clock.now()),
      (c) => c.total === 1,
    )
    expect((await v1(`/apps/${app.id}`, 'DELETE')).status).toBe(204)
    expect(await gw.backend.queues.counts(q.id, 300_000, clock.now())).toEqual({
      ready: 0,
      unacknowledged: 0,
      total: 0,
    })
  })
})
