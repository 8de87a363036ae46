/**
 * Occupancy events with `@ably/chat` (latest 1.x, from npm), msgpack and JSON, on the backend
 * TEST_BACKEND names: a room with `occupancy.enableEvents` attaches with `occupancy=metrics` and
 * gets `[meta]occupancy` events as attachments and presence members come and go (`current`
 * follows them); on Redis the count is one across nodes, and a change on one node reaches a
 * watcher on another. Without channel-metadata the attach goes on and no event comes.
 */
import { describe, expect, test } from 'bun:test'
import { ChatClient, type OccupancyEvent, type Room } from '@ably/chat'
import { addKey } from '../helpers/gateway'
import { onRedis } from '../helpers/redis-cluster'
import { rawConnected } from '../helpers/realtime-raw'
import { connectedClient, FORMATS, fresh, realtimeGateway, secondNode } from '../helpers/realtime'

const rt = realtimeGateway()

const other = secondNode(rt)

/** Resolves with the first event `check` accepts (rejects after `ms`: a stall, not a timing check). */
function eventWhere(room: Room, check: (o: { connections: number; presenceMembers: number }) => boolean, ms = 15000) {
  return new Promise<OccupancyEvent>((resolve, reject) => {
    const timer = setTimeout(() => {
      sub.unsubscribe()
      reject(
        new Error(`no matching occupancy event within ${ms} ms (current: ${JSON.stringify(room.occupancy.current)})`),
      )
    }, ms)
    const sub = room.occupancy.subscribe((e) => {
      if (!check(e.occupancy)) return
      clearTimeout(timer)
      sub.unsubscribe()
      resolve(e)
    })
  })
}

describe.each(FORMATS)('occupancy events over %s', (_format, binary) => {
  const room = async (name: string, clientId: string, port = rt.port, events = true) => {
    const chat = new ChatClient(await connectedClient(port, { key: rt.gw.key, clientId }, binary), {
      logLevel: 'silent' as never,
    })
    return chat.rooms.get(name, { occupancy: { enableEvents: events } })
  }

  test('attachments and presence members move the counts; current is the last event', async () => {
    const name = fresh('occ')
    const alice = await room(name, 'alice')
    const first = eventWhere(alice, (o) => o.connections === 1 && o.presenceMembers === 0)
    await alice.attach()
    expect((await first).occupancy).toEqual({ connections: 1, presenceMembers: 0 })
    expect(alice.occupancy.current).toEqual({ connections: 1, presenceMembers: 0 })

    const bob = await room(name, 'bob', rt.port, false)
    const two = eventWhere(alice, (o) => o.connections === 2 && o.presenceMembers === 0)
    await bob.attach()
    await two
    const entered = eventWhere(alice, (o) => o.connections === 2 && o.presenceMembers === 1)
    await bob.presence.enter({ status: 'here' })
    await entered
    expect(alice.occupancy.current).toEqual({ connections: 2, presenceMembers: 1 })
    expect(await alice.occupancy.get()).toEqual({ connections: 2, presenceMembers: 1 })

    const left = eventWhere(alice, (o) => o.connections === 1 && o.presenceMembers === 0)
    await bob.presence.leave()
    await bob.detach()
    await left
  })

  test.skipIf(!onRedis())(
    'on Redis the count is one across nodes; a change on one node reaches the other',
    async () => {
      const name = fresh('occ-nodes')
      const a = await room(name, 'alice')
      const b = await room(name, 'bob', other.port!)
      const atB = eventWhere(b, (o) => o.connections === 1)
      await b.attach()
      await atB
      // alice attaches on node A: bob on node B sees two connections, then her presence
      const both = eventWhere(b, (o) => o.connections === 2 && o.presenceMembers === 0)
      await a.attach()
      await both
      const entered = eventWhere(b, (o) => o.connections === 2 && o.presenceMembers === 1)
      await a.presence.enter()
      await entered
      const gone = eventWhere(b, (o) => o.connections === 1 && o.presenceMembers === 0)
      await a.detach()
      await gone
    },
  )
})

describe('occupancy=metrics on the wire', () => {
  test('ATTACHED echoes the param and the event carries all eight metrics, no channelSerial', async () => {
    const channel = `${fresh('occ-raw')}::$chat`
    const { raw: c } = await rawConnected(rt.base, { key: rt.gw.key })
    c.send({ action: 10, channel, params: { occupancy: 'metrics' } })
    const attached = await c.next((pm) => pm.action === 11)
    expect(attached.params).toEqual({ occupancy: 'metrics' })
    const event = await c.next((pm) => pm.action === 15)
    expect(event.channelSerial).toBeUndefined()
    expect(event.messages[0].name).toBe('[meta]occupancy')
    expect(event.messages[0].encoding).toBe('json')
    expect(JSON.parse(event.messages[0].data)).toEqual({
      metrics: {
        connections: 1,
        publishers: 1,
        subscribers: 1,
        presenceConnections: 0,
        presenceMembers: 0,
        presenceSubscribers: 1,
        objectPublishers: 0,
        objectSubscribers: 0,
      },
    })
  })

  test('without channel-metadata the attach succeeds, without the param and without events', async () => {
    const channel = fresh('occ-denied')
    const key = await addKey(rt.gw, fresh('nometa'), { capability: { [channel]: ['subscribe', 'publish'] } })
    const { raw: c } = await rawConnected(rt.base, { key })
    c.send({ action: 10, channel, params: { occupancy: 'metrics' } })
    const attached = await c.next((pm) => pm.action === 11)
    expect(attached.params).toBeUndefined()
    // a publish of its own comes back, with no occupancy event before it
    c.send({ action: 15, channel, msgSerial: 0, messages: [{ name: 'probe' }] })
    const next = await c.next((pm) => pm.action === 15)
    expect(next.messages[0].name).toBe('probe')
  })
})
