import { afterAll, beforeAll, expect, test } from 'bun:test'
import { APP_ID, createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { openSse, type SseClient } from '../helpers/sse'
import { expectError, json, keyWith, room, roomChannel, subscribed, v4room } from './chat-fixture'

let gw: TestGateway
let base: string
const open: SseClient[] = []
beforeAll(async () => {
  gw = await createTestGateway()
  base = listen(gw)
})
afterAll(async () => {
  for (const c of open) c.close()
  await gw.close()
})

const occupancy = async (name: string) => json(await gw.request(`${room(name)}/occupancy`))
const stream = async (channels: string) => {
  const c = await openSse(
    `${base}/sse?v=1.2&channels=${encodeURIComponent(channels)}&key=${encodeURIComponent(gw.key)}`,
  )
  expect(c.status).toBe(200)
  open.push(c)
  return c
}

test('a room nobody uses has zero connections and members (not 404)', async () => {
  expect(await occupancy('empty-room')).toEqual({ connections: 0, presenceMembers: 0 })
})

test('connections follow real event-stream connections opening and closing', async () => {
  const ch = roomChannel('occ1')
  const a = await stream(ch)
  await subscribed(gw, ch, 1)
  expect(await occupancy('occ1')).toEqual({ connections: 1, presenceMembers: 0 })
  const b = await stream(`${ch},other-channel`)
  const c = await stream(ch)
  await subscribed(gw, ch, 3)
  expect((await occupancy('occ1')).connections).toBe(3)
  // a stream of another room or a plain channel of the same name does not count
  await stream(roomChannel('occ2'))
  await stream('occ1')
  await subscribed(gw, roomChannel('occ2'), 1)
  expect((await occupancy('occ1')).connections).toBe(3)
  b.close()
  await subscribed(gw, ch, 2)
  expect((await occupancy('occ1')).connections).toBe(2)
  a.close()
  c.close()
  await subscribed(gw, ch, 0)
  expect(await occupancy('occ1')).toEqual({ connections: 0, presenceMembers: 0 })
  expect(await json(await gw.request(`${v4room('occ2')}/occupancy`))).toEqual({ connections: 1, presenceMembers: 0 })
})

test('presenceMembers counts the members present on the room channel', async () => {
  const ch = roomChannel('occ3')
  const enter = (clientId: string, action = 2) => ({
    id: `${clientId}:${action}`,
    action,
    clientId,
    connectionId: `conn-${clientId}`,
    timestamp: Date.now(),
  })
  await gw.backend.presence.apply(APP_ID, ch, [enter('ann'), enter('ben'), enter('cat')], { persisted: false })
  expect(await occupancy('occ3')).toEqual({ connections: 0, presenceMembers: 3 })
  await gw.backend.presence.apply(APP_ID, ch, [enter('ben', 3)], { persisted: false })
  expect((await occupancy('occ3')).presenceMembers).toBe(2)
})

test('occupancy needs channel-metadata on the room', async () => {
  const key = await keyWith(gw, 'occ', { occ1: ['subscribe', 'publish'] })
  await expectError(await gw.request(`${room('occ1')}/occupancy`, { key }), 403, 40160)
  const meta = await keyWith(gw, 'occmeta', { occ1: ['channel-metadata'] })
  expect((await gw.request(`${room('occ1')}/occupancy`, { key: meta })).status).toBe(200)
})
