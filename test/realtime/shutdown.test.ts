/**
 * Graceful shutdown of a node with realtime clients on it (a real gateway process, SIGTERM):
 * every client is told DISCONNECTED, and when the node is back the official client resumes its
 * connection (same connectionId) and channels with nothing lost and nothing published twice, even
 * with publishes in flight at the moment of the shutdown.
 */
import { afterAll, expect, test } from 'bun:test'
import * as Ably from 'ably'
import { createTestGateway, ROOT_KEY } from '../helpers/gateway'
import { GatewayNode } from '../helpers/node-process'
import { closeClients, collect, connectedClient, reach } from '../helpers/realtime'
import { rawConnected } from '../helpers/realtime-raw'
import { backendEnvFor } from '../helpers/redis-cluster'

let node: GatewayNode | undefined
afterAll(async () => {
  closeClients()
  await node?.stop()
})

/** The node's backend: the tests' redis-server when the suite runs on Redis. */
async function backendEnv(): Promise<Record<string, string>> {
  return backendEnvFor(`rt-shutdown-${Date.now()}:`)
}

test('SIGTERM: DISCONNECTED to every client; after the restart they resume with nothing lost or doubled', async () => {
  node = await GatewayNode.start({ SHUTDOWN_TIMEOUT_MS: '3000', ...(await backendEnv()) })
  const port = node.port
  const rest = new Ably.Rest({ key: ROOT_KEY, endpoint: '127.0.0.1', port, tls: false, logLevel: 0 })
  const sub = await connectedClient(port, { key: ROOT_KEY, disconnectedRetryTimeout: 200 })
  const pub = await connectedClient(port, { key: ROOT_KEY, disconnectedRetryTimeout: 200 })
  const { raw } = await rawConnected(node.url, { key: ROOT_KEY })
  const [subId, pubId] = [sub.connection.id!, pub.connection.id!]
  const ch = pub.channels.get('shutdown')
  const got = await collect(sub.channels.get('shutdown'))
  for (let i = 0; i < 5; i++) await ch.publish('n', `m${i}`)
  await got.until(5)

  // publishes in flight while the node goes down: their promises settle once the node is back
  const inflight = Array.from({ length: 50 }, (_, i) => ch.publish('n', `f${i}`))
  const disconnected = reach(sub.connection, 'disconnected', 5000)
  await node.kill('SIGTERM')
  expect(node.exit.code).toBe(0)
  await disconnected
  // the wire: DISCONNECTED, then the socket closed
  expect(raw.frames.at(-1)!.action).toBe(6)
  await raw.closing()

  await node.restart()
  await Promise.all(inflight)
  await reach(sub.connection, 'connected')
  await reach(pub.connection, 'connected')
  expect([sub.connection.id, pub.connection.id]).toEqual([subId, pubId])
  await ch.publish('n', 'after')
  const expected = [...Array.from({ length: 5 }, (_, i) => `m${i}`), ...Array.from({ length: 50 }, (_, i) => `f${i}`)]
  await got.until(56)
  expect(got.messages.map((m) => m.data)).toEqual([...expected, 'after'])
  const history = await rest.channels.get('shutdown').history({ direction: 'forwards', limit: 1000 })
  expect(history.items.map((m) => m.data)).toEqual([...expected, 'after'])
}, 30_000)

test('DISCONNECTED waits for the publishes the broker is still taking: their ACKs go out first', async () => {
  const gw = await createTestGateway()
  try {
    const base = gw.listen()
    const { raw } = await rawConnected(base, { key: gw.key })
    // the broker answers this publish only when the test says so
    const { publisher } = gw.core
    const publish = publisher.publish.bind(publisher)
    let release!: () => void
    const held = new Promise<void>((r) => (release = r))
    let started!: () => void
    const inBroker = new Promise<void>((r) => (started = r))
    publisher.publish = async (...args: Parameters<typeof publish>) => {
      const result = publish(...args)
      started()
      await held
      return result
    }
    raw.send({ action: 15, channel: 'leaving', msgSerial: 0, messages: [{ data: 'in flight' }] })
    await inBroker
    const done = gw.server!.realtime.disconnectAll()
    // frames that arrive meanwhile are not served (the client sends them again after resuming)
    raw.send({ action: 15, channel: 'leaving', msgSerial: 1, messages: [{ data: 'too late' }] })
    await Bun.sleep(20)
    expect(raw.frames.map((f) => f.action)).toEqual([4])
    release()
    expect(await done).toBe(1)
    await raw.closing()
    expect(raw.frames.map((f) => [f.action, f.msgSerial])).toEqual([
      [4, undefined],
      [1, 0],
      [6, undefined],
    ])
    publisher.publish = publish
    const history = await gw.request('/channels/leaving/messages')
    expect(((await history.json()) as Array<{ data: string }>).map((m) => m.data)).toEqual(['in flight'])
  } finally {
    await gw.close()
  }
})
