/**
 * Garbage collection of the plugin's LiveObjects (every backend): an object no longer reachable
 * from root whose last operation is older than the grace period is tombstoned by the server
 * (OBJECT_DELETE, which clients apply), and forgotten once tombstoned longer than the grace period.
 * The node's clock is a test clock; collection runs after a sync has read the channel's objects.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { LiveCounter, LiveObjects } from 'ably/liveobjects'
import { APP_ID, createTestGateway, TestClock, type TestGateway } from '../helpers/gateway'
import { closeClients, connectedClient, fresh } from '../helpers/realtime'
import { eventually, MODES } from './live-util'

const clock = new TestClock()
let gw: TestGateway
let port: number
beforeAll(async () => {
  gw = await createTestGateway({}, clock)
  port = Number(new URL(gw.listen()).port)
})
afterAll(async () => {
  closeClients()
  await gw.close()
})

const GRACE = 86_400_000
const rootOf = async (name: string) => {
  const c = await connectedClient(port, { key: gw.key, plugins: { LiveObjects } } as Ably.ClientOptions)
  return (c.channels.get(name, { modes: MODES }) as any).object.get()
}
const stored = async (channel: string) =>
  (await gw.backend.liveObjects.snapshot(APP_ID, channel)).map((r) => r.objectId)

test('an orphan past the grace period is tombstoned by the server (OBJECT_DELETE), then forgotten', async () => {
  const name = fresh('lo-gc')
  const root = await rootOf(name)
  await root.set('keep', LiveCounter.create(1))
  await root.set('drop', LiveCounter.create(2))
  const dropped = root.get('drop').instance().id
  const kept = root.get('keep').instance().id
  await root.remove('drop')
  expect(await stored(name)).toContain(dropped)
  // not yet: the orphan's last operation is within the grace period
  await rootOf(name)
  expect(await stored(name)).toContain(dropped)

  clock.advance(GRACE + 60_000)
  await rootOf(name) // a sync, after which the channel is collected
  await eventually(async () => {
    const rec = (await gw.backend.liveObjects.snapshot(APP_ID, name)).find((r) => r.objectId === dropped)
    expect(rec?.tombstone).toBe(true)
  })
  const r = await gw.request(`/channels/${name}/object/${encodeURIComponent(dropped)}`)
  expect(r.status).toBe(404)
  expect(root.compact()).toEqual({ keep: 1 })

  clock.advance(GRACE + 60_000)
  await rootOf(name)
  await eventually(async () => expect(await stored(name)).not.toContain(dropped))
  expect(await stored(name)).toContain(kept)
  expect((await rootOf(name)).compact()).toEqual({ keep: 1 })
})

test('a removed key past the grace period is forgotten by the same pass; a key written again is kept', async () => {
  const name = fresh('lo-gc-keys')
  const root = await rootOf(name)
  await root.set('gone', 1)
  await root.set('back', 1)
  await root.remove('gone')
  await root.remove('back')
  const rootEntries = async () => (await gw.backend.liveObjects.snapshot(APP_ID, name))[0]!.entries ?? {}
  expect((await rootEntries()).gone?.tombstone).toBe(true)
  clock.advance(GRACE + 60_000)
  await root.set('back', 2)
  await rootOf(name) // a sync, after which the channel is collected
  await eventually(async () => expect(Object.keys(await rootEntries()).sort()).toEqual(['back']))
  expect((await rootOf(name)).compact()).toEqual({ back: 2 })
})
