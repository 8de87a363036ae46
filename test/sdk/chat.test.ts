/**
 * `@ably/chat` (latest 1.x, from npm) against the gateway, msgpack and JSON: typing and room
 * reactions are ephemeral realtime publishes on `<room>::$chat`, seen by another client and never
 * stored; a channel publish cannot forge a chat message.
 */
import { describe, expect, test } from 'bun:test'
import { ChatClient, type RoomReactionEvent, type TypingSetEvent } from '@ably/chat'
import { connectedClient, firstOf, FORMATS, fresh, realtimeGateway } from '../helpers/realtime'

const rt = realtimeGateway()

describe.each(FORMATS)('@ably/chat over %s', (_format, binary) => {
  const chat = async (clientId: string) =>
    new ChatClient(await connectedClient(rt.port, { key: rt.gw.key, clientId }, binary), {
      logLevel: 'silent' as never,
    })

  const joined = async (roomName: string, clientId: string) => {
    const room = await (await chat(clientId)).rooms.get(roomName)
    await room.attach()
    return room
  }

  test('typing start and stop by one client are seen by another', async () => {
    const name = fresh('typing')
    const alice = await joined(name, 'alice')
    const bob = await joined(name, 'bob')
    const started = firstOf<TypingSetEvent>(
      (cb) => bob.typing.subscribe(cb),
      (e) => e.change.clientId === 'alice' && e.change.type === 'typing.started',
    )
    await alice.typing.keystroke()
    const s = await started
    expect([...s.currentlyTyping]).toEqual(['alice'])
    const stopped = firstOf<TypingSetEvent>(
      (cb) => bob.typing.subscribe(cb),
      (e) => e.change.clientId === 'alice' && e.change.type === 'typing.stopped',
    )
    await alice.typing.stop()
    expect([...(await stopped).currentlyTyping]).toEqual([])
    // ephemeral: nothing of it is in the room channel's history
    const history = await rt.rest().channels.get(`${name}::$chat`).history({ limit: 100 })
    expect(history.items.filter((m) => m.name?.startsWith('typing.'))).toEqual([])
  })

  test('room reactions by one client are seen by another (and by the sender, as its own)', async () => {
    const name = fresh('reactions')
    const alice = await joined(name, 'alice')
    const bob = await joined(name, 'bob')
    const atBob = firstOf<RoomReactionEvent>(
      (cb) => bob.reactions.subscribe(cb),
      (e) => e.reaction.name === 'like',
    )
    const atAlice = firstOf<RoomReactionEvent>(
      (cb) => alice.reactions.subscribe(cb),
      (e) => e.reaction.name === 'like',
    )
    await alice.reactions.send({ name: 'like', metadata: { n: 1 }, headers: { h: 'v' } })
    const r = (await atBob).reaction
    expect([r.clientId, r.isSelf, r.metadata, r.headers]).toEqual(['alice', false, { n: 1 }, { h: 'v' }])
    expect((await atAlice).reaction.isSelf).toBe(true)
    const history = await rt.rest().channels.get(`${name}::$chat`).history({ limit: 100 })
    expect(history.items).toEqual([])
  })

  // @ably/chat's own room-reactions suite reads what its subscriber got right after `send` resolves
  test('a room reaction sent right after the attach has reached its sender when the send resolves', async () => {
    const room = await (await chat('alice')).rooms.get(fresh('reaction-echo'))
    const got: string[] = []
    room.reactions.subscribe((e: RoomReactionEvent) => void got.push(e.reaction.name))
    await room.attach()
    for (const name of ['like', 'love', 'hate']) {
      await room.reactions.send({ name })
      expect(got[got.length - 1]).toBe(name)
    }
  })

  test('chat messages still go through REST; a channel publish cannot forge one', async () => {
    const name = fresh('forge')
    const alice = await joined(name, 'alice')
    await alice.messages.send({ text: 'real' })
    const channel = (await connectedClient(rt.port, { key: rt.gw.key, clientId: 'mallory' }, binary)).channels.get(
      `${name}::$chat`,
    )
    const forged = JSON.stringify({ text: 'forged', metadata: {} })
    // stored: refused (the room's log is the chat store)
    await expect(
      channel.publish({ name: 'chat.message', data: forged, encoding: 'json' } as never),
    ).rejects.toMatchObject({ code: 40160 })
    await expect(channel.publish('anything', 'stored')).rejects.toMatchObject({ code: 40160 })
    // ephemeral under a name of the chat service: refused too
    await expect(
      channel.publish({ name: 'chat.message', data: forged, encoding: 'json', extras: { ephemeral: true } } as never),
    ).rejects.toMatchObject({ code: 40160 })
    const page = await alice.messages.history({ limit: 10 })
    expect(page.items.map((m) => m.text)).toEqual(['real'])
  })
})
