/**
 * `messages.getVersions` with `@ably/chat` (latest 1.x, from npm), msgpack and JSON, on the
 * backend TEST_BACKEND names: every version of a message, oldest first, each as send, update and
 * delete returned it; the route pages with `limit` and its Link headers (first, current, next).
 */
import { describe, expect, test } from 'bun:test'
import { ChatClient, ChatMessageAction } from '@ably/chat'
import { connectedClient, FORMATS, fresh, realtimeGateway } from '../helpers/realtime'

const rt = realtimeGateway()

describe.each(FORMATS)('getVersions over %s', (_format, binary) => {
  const room = async (name: string, clientId: string) => {
    const chat = new ChatClient(await connectedClient(rt.port, { key: rt.gw.key, clientId }, binary), {
      logLevel: 'silent' as never,
    })
    const r = await chat.rooms.get(name)
    await r.attach()
    return r
  }

  test('create, updates and delete, in order, as each call returned them', async () => {
    const alice = await room(fresh('versions'), 'alice')
    const sent = await alice.messages.send({ text: 'v0', metadata: { a: 1 } })
    const u1 = await alice.messages.update(sent.serial, { text: 'v1' }, { description: 'typo' })
    const u2 = await alice.messages.update(sent.serial, { text: 'v2', headers: { h: 'x' } })
    const del = await alice.messages.delete(sent.serial, { description: 'gone', metadata: { why: 'spam' } })
    const versions = await alice.messages.getVersions(sent.serial)
    expect(versions.items.map((m) => [m.action, m.text, m.version.serial])).toEqual([
      [ChatMessageAction.MessageCreate, 'v0', sent.version.serial],
      [ChatMessageAction.MessageUpdate, 'v1', u1.version.serial],
      [ChatMessageAction.MessageUpdate, 'v2', u2.version.serial],
      [ChatMessageAction.MessageDelete, '', del.version.serial],
    ])
    expect(versions.items).toEqual([sent, u1, u2, del])
    expect(versions.hasNext()).toBe(false)
  })

  test('an unknown message is 404', async () => {
    const alice = await room(fresh('versions-missing'), 'alice')
    await expect(alice.messages.getVersions('01700000000000-000@nope:000')).rejects.toMatchObject({ statusCode: 404 })
  })
})

test('the versions route pages with limit: first, current and next links', async () => {
  const name = fresh('versions-pages')
  const rest = rt.rest()
  const sent = (await rest.request('post', `/chat/v4/rooms/${name}/messages`, 4, {}, { text: 'a' })).items[0] as {
    serial: string
  }
  for (const text of ['b', 'c'])
    await rest.request('put', `/chat/v4/rooms/${name}/messages/${sent.serial}`, 4, {}, { message: { text } })
  const path = `/chat/v4/rooms/${name}/messages/${encodeURIComponent(sent.serial)}/versions`
  const first = await rest.request('get', path, 4, { limit: '2' })
  expect(first.items.map((m) => (m as { text: string }).text)).toEqual(['a', 'b'])
  const second = await first.next()
  expect(second!.items.map((m) => (m as { text: string }).text)).toEqual(['c'])
  expect(second!.hasNext()).toBe(false)
  expect((await second!.first()).items.map((m) => (m as { text: string }).text)).toEqual(['a', 'b'])
  expect((await second!.current()).items.map((m) => (m as { text: string }).text)).toEqual(['c'])
  // defaults: one page, whose first link is followed too
  const all = await rest.request('get', path, 4)
  expect((await all.first()).items).toHaveLength(3)
})
