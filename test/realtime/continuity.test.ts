/**
 * When a channel's continuity cannot be kept: a client resumes after what it missed left the
 * channel's retention (a 1 s history and a 16-message ring here). The attach says so (no RESUMED,
 * error 90003) and the client reports the discontinuity; it goes on live from there.
 */
import { beforeAll, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { addKey } from '../helpers/gateway'
import { collect, connectedClient, cutSocket, fresh, reach, realtimeGateway } from '../helpers/realtime'
import { rawConnected } from '../helpers/realtime-raw'

const TTL = 1000
const rt = realtimeGateway({ historyTtlMs: TTL, ringSize: 16, resumeWindowMs: 0 })

const RESUMED = 1 << 2
let publisherKey: Promise<string>
beforeAll(() => {
  publisherKey = addKey(rt.gw, 'publisher')
})

/** Publishes `n` messages and lets them (and the ones before) leave retention (with a key of its own). */
async function expire(channel: string, n: number) {
  const ch = rt.rest({ key: await publisherKey }).channels.get(channel)
  for (let i = 0; i < n; i++) await ch.publish('old', `old${i}`)
  await Bun.sleep(TTL + 100)
  for (let i = 0; i < 20; i++) await ch.publish('pushing', `p${i}`)
}

test('on the wire: ATTACH with a channelSerial no longer retained is ATTACHED without RESUMED, error 90003', async () => {
  const channel = fresh('gone')
  await rt.rest().channels.get(channel).publish('n', 'first')
  const [first] = (await rt.rest().channels.get(channel).history()).items
  await expire(channel, 1)
  const { raw } = await rawConnected(rt.base, { key: rt.gw.key })
  raw.send({ action: 10, channel, channelSerial: first!.serial })
  const attached = await raw.next((f) => f.action === 11)
  expect(attached.flags & RESUMED).toBe(0)
  expect([attached.error?.code, attached.error?.statusCode]).toEqual([90003, 404])
  // it goes on live from the channel's head: nothing of the past is replayed
  await rt.rest().channels.get(channel).publish('n', 'live')
  const msg = await raw.next((f) => f.action === 15)
  expect(msg.messages.map((m: { data: string }) => m.data)).toEqual(['live'])
  raw.close()
})

test('the official client resuming too late: the channel reports the discontinuity (resumed false, 90003), then goes on live', async () => {
  const name = fresh('late')
  const client = await connectedClient(rt.port, { key: rt.gw.key })
  const ch = client.channels.get(name)
  const got = await collect(ch)
  await rt.rest().channels.get(name).publish('n', 'before')
  await got.until(1)
  const changes: Ably.ChannelStateChange[] = []
  ch.on('update', (c) => changes.push(c))
  ch.on('attached', (c) => changes.push(c))
  // the client cannot reconnect (its key is not authenticated) while the channel moves on past what it saw
  const auth = rt.gw.core.auth
  const authenticate = auth.authenticate.bind(auth)
  let release!: () => void
  const held = new Promise<void>((r) => (release = r))
  auth.authenticate = async (...args) => {
    if (args[0].key === rt.gw.key) await held
    return authenticate(...args)
  }
  try {
    cutSocket(rt.gw, client.connection.id!)
    await expire(name, 1)
  } finally {
    auth.authenticate = authenticate
    release()
  }
  await reach(client.connection, 'connected')
  for (let i = 0; i < 200 && changes.length === 0; i++) await Bun.sleep(10)
  expect(changes.map((c) => [c.resumed, c.reason?.code])).toEqual([[false, 90003]])
  await rt.rest().channels.get(name).publish('n', 'live')
  await got.until(2)
  expect(got.messages.map((m) => m.data)).toEqual(['before', 'live'])
})
