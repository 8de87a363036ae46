/**
 * `@ably/spaces` (latest, from npm) live cursors against the gateway, msgpack and JSON: batches
 * published on `<space>::$cursors` by one member reach another, `cursors.getAll()` reads the last
 * position of each member back from the channel's history, and a member refused `history` by
 * its capability gets an error it can catch.
 */
import { describe, expect, test } from 'bun:test'
import Spaces, { type CursorUpdate } from '@ably/spaces'
import { authCallbackOf, connectedClient, FORMATS, fresh, realtimeGateway } from '../helpers/realtime'

const rt = realtimeGateway()

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe.each(FORMATS)('@ably/spaces over %s', (_format, binary) => {
  const member = async (spaceName: string, clientId: string) => {
    const client = await connectedClient(rt.port, { key: rt.gw.key, clientId }, binary)
    const space = await new Spaces(client).get(spaceName)
    await space.enter({ name: clientId })
    return { client, space }
  }

  test('cursors set by one member are seen by another, and getAll returns each member last position', async () => {
    const name = fresh('space')
    const alice = await member(name, 'alice')
    const bob = await member(name, 'bob')
    const seen: CursorUpdate[] = []
    bob.space.cursors.subscribe('update', (u) => seen.push(u))
    // the SDK sends only once the cursors channel shows more than one member: set until bob sees one
    for (let i = 0; i < 100 && !seen.some((u) => u.clientId === 'alice'); i++) {
      await alice.space.cursors.set({ position: { x: i, y: 2 * i }, data: { color: 'red' } })
      await sleep(50)
    }
    const got = seen.find((u) => u.clientId === 'alice')!
    expect(got).toBeDefined()
    expect(got.connectionId).toBe(alice.client.connection.id!)
    expect(got.data).toEqual({ color: 'red' })
    await alice.space.cursors.set({ position: { x: 500, y: 600 } })
    // the SDK sends it with its next batch: once bob has it, it is in the channel's history
    // (waited for, not slept on: on a busy machine a batch interval and the delivery took longer)
    for (let i = 0; i < 200 && !seen.some((u) => u.clientId === 'alice' && u.position.x === 500); i++) await sleep(50)
    expect(seen.some((u) => u.clientId === 'alice' && u.position.x === 500)).toBe(true)
    // getAll: presence of the cursors channel, then its history (`page.current()`)
    const all = await bob.space.cursors.getAll()
    expect(all[alice.client.connection.id!]?.position).toEqual({ x: 500, y: 600 })
    expect(all[alice.client.connection.id!]?.clientId).toBe('alice')
    expect((await alice.space.cursors.getSelf())?.position).toEqual({ x: 500, y: 600 })
  })

  test('a member whose capability lacks history on the space: getAll is refused with an error it can catch', async () => {
    const name = fresh('denied')
    // presence and subscribe on the space (both sub-channels are authorised as the space's name)
    const capability = JSON.stringify({ [name]: ['presence', 'subscribe'] })
    const { authCallback } = authCallbackOf(() => rt.rest().auth.requestToken({ capability, clientId: 'eve' }))
    const client = await connectedClient(rt.port, { authCallback }, binary)
    const space = await new Spaces(client).get(name)
    await space.enter({ name: 'eve' })
    // alone on the cursors channel: the SDK publishes nothing, so nothing is refused
    await space.cursors.set({ position: { x: 1, y: 1 } })
    await sleep(300) // the SDK enters the cursors channel's presence without awaiting it
    await expect(space.cursors.getAll()).rejects.toMatchObject({ code: 40160 })
    expect(client.connection.state).toBe('connected')
  })
})
