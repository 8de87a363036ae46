import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { messages, openSse, type SseClient } from '../helpers/sse'
import { as, json, room, roomChannel, send, subscribed } from './chat-fixture'

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

const stream = async (channels: string, qs = '') => {
  const c = await openSse(
    `${base}/sse?v=1.2&channels=${encodeURIComponent(channels)}&key=${encodeURIComponent(gw.key)}${qs}`,
  )
  expect(c.status).toBe(200)
  open.push(c)
  return c
}

test('an event-stream subscriber of the room channel sees send, update, delete, typing and reactions in order', async () => {
  const ch = roomChannel('live')
  const sub = await stream(ch)
  await subscribed(gw, ch)

  const m = await send(gw, 'live', { text: 'hello', metadata: { a: 1 }, headers: { h: 'v' } }, { headers: as('amy') })
  const updated = await json(
    await gw.request(`${room('live')}/messages/${m.serial}`, {
      method: 'PATCH',
      json: { text: 'hello!' },
      headers: as('amy'),
    }),
  )
  const other = await send(gw, 'live', { text: 'second' }, { headers: as('bob') })
  await json(
    await gw.request(`${room('live')}/typing`, { method: 'POST', json: { isTyping: true }, headers: as('bob') }),
  )
  const reaction = await json(
    await gw.request(`${room('live')}/messages/${other.serial}/reactions`, {
      method: 'POST',
      json: { type: 'like' },
      headers: as('amy'),
    }),
    201,
  )
  const deleted = await json(
    await gw.request(`${room('live')}/messages/${m.serial}`, { method: 'DELETE', headers: as('amy') }),
  )
  await json(
    await gw.request(`${room('live')}/typing`, { method: 'POST', json: { isTyping: false }, headers: as('bob') }),
  )

  await sub.until((e) => messages(e).length >= 7)
  const got = messages(sub.events).map((e) => JSON.parse(e.data))
  expect(got.map((e) => e.name)).toEqual([
    'chat.message',
    'chat.message',
    'chat.message',
    'typing.started',
    'reaction.create',
    'chat.message',
    'typing.stopped',
  ])
  expect(got.every((e) => e.channel === ch)).toBe(true)
  // changes carry the message's serial (and their own in version): the other events are in serial order
  const serials = got.filter((e) => !e.version).map((e) => e.serial)
  expect([...serials].sort()).toEqual(serials)
  const data = got.map((e) => JSON.parse(e.data))

  // create: the message as the hosted service writes it (text and metadata; headers in extras)
  expect(got[0]).toMatchObject({ serial: m.serial, clientId: 'amy', encoding: 'json', extras: { headers: { h: 'v' } } })
  expect(data[0]).toEqual({ text: 'hello', metadata: { a: 1 } })
  // update and delete: the message's serial and creation time, action 1 / 2, the new content as a
  // create event holds it, and the version (as the hosted service sends them)
  expect(got[1]).toMatchObject({
    serial: m.serial,
    action: 1,
    clientId: 'amy',
    timestamp: m.timestamp,
    extras: { headers: { h: 'v' } },
    version: { serial: updated.version.serial, timestamp: updated.version.timestamp, clientId: 'amy' },
  })
  expect(data[1]).toEqual({ text: 'hello!', metadata: { a: 1 } })
  expect(data[2]).toEqual({ text: 'second', metadata: {} })
  expect(data[3]).toEqual({ currentlyTyping: ['bob'], change: { clientId: 'bob', type: 'typing.started' } })
  expect(data[4]).toMatchObject({
    type: 'reaction.create',
    messageSerial: other.serial,
    reaction: { type: 'distinct', name: 'like', clientId: 'amy' },
  })
  expect(data[4].summary.distinct.like.clientIds).toEqual(['amy'])
  expect(got[4].serial).toBe(reaction.serial)
  expect(got[5]).toMatchObject({
    serial: m.serial,
    action: 2,
    clientId: 'amy',
    extras: { headers: {} },
    version: { serial: deleted.version.serial, timestamp: deleted.version.timestamp, clientId: 'amy' },
  })
  expect(data[5]).toEqual({ text: '', metadata: {} })
  expect(data[6]).toEqual({ currentlyTyping: [], change: { clientId: 'bob', type: 'typing.stopped' } })
}, 20_000)

test('a stream opened later replays the room with rewind, and resumes after a drop', async () => {
  const ch = roomChannel('replay')
  for (let i = 0; i < 3; i++) await send(gw, 'replay', { text: `r${i}` })
  const first = await stream(ch, '&rewind=2')
  await first.until((e) => messages(e).length === 2)
  expect(messages(first.events).map((e) => JSON.parse(JSON.parse(e.data).data).text)).toEqual(['r1', 'r2'])
  const lastId = messages(first.events)[1]!.id!
  first.close()
  await subscribed(gw, ch, 0)
  await send(gw, 'replay', { text: 'r3' })
  const again = await stream(ch, `&lastEvent=${encodeURIComponent(lastId)}`)
  await again.until((e) => messages(e).length === 1)
  expect(JSON.parse(JSON.parse(messages(again.events)[0]!.data).data).text).toBe('r3')
}, 20_000)
