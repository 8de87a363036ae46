import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { ChannelModel, ConsumeMessage } from 'amqplib'
import { join } from 'node:path'
import { closeQuietly } from '../../src/backend/amqp/connection'
import { waitFor } from '../helpers/wait'
import { consume } from './consumer'
import { ACCESS_TOKEN, createTestGateway, type TestGateway } from '../helpers/gateway'
import { RABBITMQ_BIN, RabbitNode } from '../helpers/rabbitmq-node'
import { requireSystem } from '../helpers/system'

/**
 * RabbitMQ itself stopped and started again (not a cut connection): a node of this test's own
 * (test/helpers/rabbitmq-node.ts; the shared service on 5672 is left alone), stopped with
 * `rabbitmqctl stop` and started on the same data, as an operator's restart is.
 */
const HAVE = requireSystem(join(RABBITMQ_BIN, 'rabbitmq-server'), 'rabbitmq-server')
/** Starting a node takes up to a minute on a busy machine. */
const SLOW = 300_000
/** How long a delivery may take, the broker just started included. */
const WAIT = 60_000

let node: RabbitNode
let gw: TestGateway
const consumers: ChannelModel[] = []

const body = async (r: Response) => (await r.json()) as any
const v1 = (path: string, method = 'GET', json?: unknown) =>
  gw.request(`/v1${path}`, { method, json, key: null, headers: { authorization: `Bearer ${ACCESS_TOKEN}` } })
const publish = (key: string, channel: string, message: unknown) =>
  gw.request(`/channels/${encodeURIComponent(channel)}/messages`, { method: 'POST', json: message, key })

const data = (m: ConsumeMessage) => JSON.parse(m.content.toString()).messages[0].data as string

describe.skipIf(!HAVE)('RabbitMQ stopped and started again', () => {
  beforeAll(async () => {
    node = await RabbitNode.create()
    await node.start()
    gw = await createTestGateway({ amqpUrl: node.amqpUrl, amqpManagementUrl: node.managementUrl })
  }, SLOW)

  afterAll(async () => {
    for (const c of consumers) await closeQuietly(c)
    await gw?.close()
    await node?.destroy()
  }, SLOW)

  test(
    'publishes keep answering 201 while it is down, rule deliveries resume once it is back, nothing acked comes again',
    async () => {
      const accountId = (await body(await v1('/me'))).account.id
      const app = await body(await v1(`/accounts/${accountId}/apps`, 'POST', { name: 'restart' }))
      const key = (await body(await v1(`/apps/${app.id}/keys`, 'POST', { name: 'k', capability: { '*': ['*'] } }))).key
      const created = await v1(`/apps/${app.id}/queues`, 'POST', { name: 'durable', ttl: 30, maxLength: 1000 })
      expect(created.status).toBe(201)
      const q = await body(created)
      const rule = { ruleType: 'amqp', source: { channelFilter: '^orders$' }, target: { queueId: q.id } }
      expect((await v1(`/apps/${app.id}/rules`, 'POST', rule)).status).toBe(201)

      const first = await consume(q.amqp.uri, q.amqp.queueName, consumers)
      expect((await publish(key, 'orders', { name: 'n', data: 'acked' })).status).toBe(201)
      expect((await publish(key, 'orders', { name: 'n', data: 'held' })).status).toBe(201)
      await waitFor(
        () => first.got.length,
        (n) => n === 2,
        WAIT,
      )
      expect(first.got.map(data)).toEqual(['acked', 'held'])
      first.ch.ack(first.got[0]!)
      // the ack reaches the broker before it stops: a round trip on the same channel after it
      await first.ch.checkQueue(q.amqp.queueName)

      await node.stop()
      for (let i = 1; i <= 5; i++)
        expect((await publish(key, 'orders', { name: 'n', data: `down${i}` })).status).toBe(201)
      // managing queues needs the broker: refused as unavailable, not hung
      expect((await v1(`/apps/${app.id}/queues`, 'POST', { name: 'later', ttl: 1, maxLength: 1 })).status).toBe(503)

      await node.start()
      // the same credentials, the same durable queue: 'held' (never acked) comes again, 'acked' does not
      const second = await consume(q.amqp.uri, q.amqp.queueName, consumers)
      const seen: string[] = []
      const take = (n: number) =>
        waitFor(
          () => {
            for (const m of second.got.splice(0)) {
              seen.push(data(m))
              second.ch.ack(m)
            }
            return seen.length
          },
          (len) => len >= n,
          WAIT,
        )
      await take(6)
      expect((await publish(key, 'orders', { name: 'n', data: 'after' })).status).toBe(201)
      await take(7)
      // anything late would be a duplicate: a last marker through the same path comes after it
      expect((await publish(key, 'orders', { name: 'n', data: 'last' })).status).toBe(201)
      await take(8)
      expect(seen).toEqual(['held', 'down1', 'down2', 'down3', 'down4', 'down5', 'after', 'last'])
    },
    SLOW,
  )
})
