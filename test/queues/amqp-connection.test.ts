import { afterAll, describe, expect, test } from 'bun:test'
import { AmqpConnection, closeQuietly } from '../../src/backend/amqp/connection'
import { requireSystem } from '../helpers/system'
import { TcpProxy } from '../helpers/tcp-proxy'
import { waitFor } from '../helpers/wait'

/**
 * The gateway's AMQP connection against the local RabbitMQ, through a TCP proxy of the test's own
 * that can hold the broker's frames back: closes that cross the broker's own close still end.
 */
const HAVE = requireSystem('/usr/sbin/rabbitmq-server', 'rabbitmq-server')
const MANAGEMENT = 'http://127.0.0.1:15672/api'
const AUTH = 'Basic ' + Buffer.from('guest:guest').toString('base64')
const vhosts: string[] = []

const management = (method: string, path: string) =>
  fetch(`${MANAGEMENT}${path}`, {
    method,
    headers: { authorization: AUTH, 'content-type': 'application/json' },
    body: method === 'PUT' ? '{}' : undefined,
  })

/** Resolves with 'settled' once `p` settles, or with 'hung' after `ms` (a bound only a hang crosses). */
const within = (p: Promise<unknown>, ms: number) =>
  Promise.race([p.then(() => 'settled' as const), Bun.sleep(ms).then(() => 'hung' as const)])

/** A connection of the gateway's, connected, on a vhost of its own, through a proxy of the test's. */
async function ownConnection() {
  const vhost = `gw-close-${crypto.randomUUID()}`
  vhosts.push(vhost)
  expect((await management('PUT', `/vhosts/${encodeURIComponent(vhost)}`)).status).toBeLessThan(300)
  const proxy = await TcpProxy.start(5672)
  const conn = new AmqpConnection(
    `amqp://guest:guest@127.0.0.1:${proxy.port}/${encodeURIComponent(vhost)}`,
    () => {},
    () => {},
  )
  const model = await conn.connected(10_000)
  return { vhost, proxy, conn, model }
}

/**
 * On a connection of its own, `open` opens what is to be closed and gives its close, which is
 * started while the broker's own close (the vhost deleted) is held at the proxy, so that the two
 * cross; then the broker's frames and end are let through. Answers whether that close settled
 * within 15 s.
 */
async function closeCrossingTheBrokers(open: (conn: AmqpConnection) => Promise<() => Promise<void>>) {
  const { vhost, proxy, conn } = await ownConnection()
  try {
    const close = await open(conn)
    const hold = proxy.holdReplies()
    const deleting = management('DELETE', `/vhosts/${encodeURIComponent(vhost)}`)
    await waitFor(hold.bytes, (n) => n > 0)
    const closing = close()
    await Bun.sleep(200)
    hold.release()
    const outcome = await within(closing, 15_000)
    expect((await deleting).status).toBeLessThan(300)
    return outcome
  } finally {
    await conn.close()
    await proxy.stop()
  }
}

describe.skipIf(!HAVE)('AMQP connection on RabbitMQ', () => {
  afterAll(async () => {
    for (const v of vhosts) await management('DELETE', `/vhosts/${encodeURIComponent(v)}`).catch(() => {})
  })

  test("closing while the broker closes the connection (its vhost deleted) ends, when the broker's close-ok never comes", async () => {
    expect(await closeCrossingTheBrokers(async (conn) => () => conn.close())).toBe('settled')
  }, 30_000)

  test("a channel's close ends when the connection goes meanwhile (amqplib's own close would wait forever)", async () => {
    const outcome = await closeCrossingTheBrokers(async (conn) => {
      const ch = await (await conn.connected(1000)).createChannel()
      ch.on('error', () => {})
      return () => closeQuietly(ch)
    })
    expect(outcome).toBe('settled')
  }, 30_000)

  test('closing on a broker that stopped answering (its frames lost, the socket open) ends, the socket let go', async () => {
    const { proxy, conn, model } = await ownConnection()
    try {
      let closed = false
      model.on('close', () => (closed = true))
      proxy.dropReplies()
      // the heartbeat would find it out after a minute or two; the close lets go after its grace
      expect(await within(conn.close(), 15_000)).toBe('settled')
      await waitFor(
        () => closed,
        (c) => c,
      )
    } finally {
      await proxy.stop()
    }
  }, 30_000)
})
