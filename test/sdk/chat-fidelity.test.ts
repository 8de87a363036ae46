/**
 * `@ably/chat` (latest 1.x, from npm) against the gateway, msgpack and JSON, on the backend
 * TEST_BACKEND names (issue 33): an update and a delete made over REST reach a realtime subscriber
 * as the hosted service sends them (the original serial, the action, the version fields), and
 * `historyBeforeSubscribe` includes the message at the attach serial; a JWT's room claim is the
 * `userClaim` of what its holder does in the room, and nothing else gives one.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import {
  ChatClient,
  ChatMessageAction,
  ChatMessageEventType,
  PresenceEventType,
  TypingEventType,
  type ChatMessageEvent,
  type PresenceEvent,
  type TypingSetEvent,
} from '@ably/chat'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { rawConnected } from '../helpers/realtime-raw'
import { makeJwt } from '../helpers/tokens'
import { onRedis } from '../helpers/redis-cluster'
import { attachSerial, connectedClient, FORMATS, fresh, realtimeGateway } from '../helpers/realtime'

const rt = realtimeGateway()

/** A JWT of the root key for `clientId`, with every capability and these claims. */
function jwtFor(clientId: string, claims: Record<string, unknown>): string {
  const [keyName, secret] = [rt.gw.key.slice(0, rt.gw.key.indexOf(':')), rt.gw.key.slice(rt.gw.key.indexOf(':') + 1)]
  const now = Math.floor(Date.now() / 1000)
  return makeJwt(keyName, secret, {
    iat: now - 5,
    exp: now + 3600,
    'x-ably-capability': '{"*":["*"]}',
    'x-ably-clientId': clientId,
    ...claims,
  })
}
/** On Redis, a second node of the same deployment (embedded is single-node). */
let other: { gw: TestGateway; port: number } | undefined
beforeAll(async () => {
  if (!onRedis()) return
  const gw = await createTestGateway({ redisUrl: rt.gw.config.redisUrl, redisPrefix: rt.gw.config.redisPrefix })
  other = { gw, port: Number(new URL(gw.listen()).port) }
})
afterAll(async () => {
  await other?.gw.close()
})

/** Collects what `subscribe` hands over; `until` resolves once `n` items have come (rejects after `ms`). */
function collected<T>(subscribe: (cb: (x: T) => void) => void) {
  const items: T[] = []
  const waiters: Array<() => void> = []
  subscribe((x) => {
    items.push(x)
    for (const w of waiters.splice(0)) w()
  })
  const until = async (n: number, ms = 8000) => {
    const deadline = Date.now() + ms
    while (items.length < n) {
      if (Date.now() > deadline) throw new Error(`${items.length} of ${n} items within ${ms} ms`)
      await new Promise<void>((resolve) => {
        waiters.push(resolve)
        setTimeout(resolve, 100)
      })
    }
    return items
  }
  return { items, until }
}

describe.each(FORMATS)('@ably/chat over %s', (_format, binary) => {
  const chat = async (clientId: string, port = rt.port, claims?: Record<string, unknown>) =>
    new ChatClient(
      await connectedClient(port, claims ? { token: jwtFor(clientId, claims) } : { key: rt.gw.key, clientId }, binary),
      { logLevel: 'silent' as never },
    )

  const joined = async (roomName: string, clientId: string, port = rt.port, claims?: Record<string, unknown>) => {
    const room = await (await chat(clientId, port, claims)).rooms.get(roomName)
    await room.attach()
    return room
  }

  test('an update and a delete made over REST reach a subscriber with the original serial, the action and the version', async () => {
    const name = fresh('edits')
    const alice = await joined(name, 'alice')
    const bob = await joined(name, 'bob')
    const seen = collected<ChatMessageEvent>((cb) => bob.messages.subscribe(cb))
    const sent = await alice.messages.send({ text: 'hello', metadata: { a: 1 }, headers: { h: 'v' } })
    const updated = await alice.messages.update(
      sent.serial,
      { text: 'hello!', metadata: { a: 2 }, headers: { h: 'w' } },
      { description: 'typo', metadata: { why: 'fix' } },
    )
    const deleted = await alice.messages.delete(sent.serial, { description: 'gone', metadata: { why: 'spam' } })
    const events = await seen.until(3)
    expect(events.map((e) => e.type)).toEqual([
      ChatMessageEventType.Created,
      ChatMessageEventType.Updated,
      ChatMessageEventType.Deleted,
    ])
    const [created, update, del] = events.map((e) => e.message)
    expect(created!.serial).toBe(sent.serial)

    expect(update!.serial).toBe(sent.serial)
    expect(update!.action).toBe(ChatMessageAction.MessageUpdate)
    expect(update!.clientId).toBe('alice')
    expect([update!.text, update!.metadata, update!.headers]).toEqual(['hello!', { a: 2 }, { h: 'w' }])
    expect(update!.timestamp.getTime()).toBe(sent.timestamp.getTime())
    expect(update!.version).toEqual({
      serial: updated.version.serial,
      timestamp: updated.version.timestamp,
      clientId: 'alice',
      description: 'typo',
      metadata: { why: 'fix' },
    })
    expect(update!.version.serial > sent.serial).toBe(true)

    expect(del!.serial).toBe(sent.serial)
    expect(del!.action).toBe(ChatMessageAction.MessageDelete)
    expect([del!.text, del!.metadata, del!.headers]).toEqual(['', {}, {}])
    expect(del!.version).toEqual({
      serial: deleted.version.serial,
      timestamp: deleted.version.timestamp,
      clientId: 'alice',
      description: 'gone',
      metadata: { why: 'spam' },
    })
    expect(del!.version.serial > update!.version.serial).toBe(true)
    // the subscriber's copy, brought up to date by the events, is what REST answers
    expect(created!.with(events[1]!).with(events[2]!).version.serial).toBe(deleted.version.serial)
    expect((await alice.messages.get(sent.serial)).version.serial).toBe(deleted.version.serial)
    // history shows the message once, in its latest version
    const page = await bob.messages.history({ limit: 10 })
    expect(page.items.map((m) => [m.serial, m.action])).toEqual([[sent.serial, ChatMessageAction.MessageDelete]])
  })

  test.skipIf(!onRedis())('on Redis, the changes reach a subscriber on another node, in channel order', async () => {
    const name = fresh('nodes')
    const alice = await joined(name, 'alice')
    const bob = await joined(name, 'bob', other!.port)
    const seen = collected<ChatMessageEvent>((cb) => bob.messages.subscribe(cb))
    const sent = await alice.messages.send({ text: 'v0' })
    const versions = [sent.version.serial]
    for (const text of ['v1', 'v2', 'v3'])
      versions.push((await alice.messages.update(sent.serial, { text })).version.serial)
    versions.push((await alice.messages.delete(sent.serial)).version.serial)
    const events = await seen.until(5)
    expect(events.map((e) => [e.message.serial, e.message.text, e.message.version.serial])).toEqual(
      ['v0', 'v1', 'v2', 'v3', ''].map((text, i) => [sent.serial, text, versions[i]!]),
    )
    expect(events.map((e) => e.type)).toEqual([
      ChatMessageEventType.Created,
      ChatMessageEventType.Updated,
      ChatMessageEventType.Updated,
      ChatMessageEventType.Updated,
      ChatMessageEventType.Deleted,
    ])
  })

  test('historyBeforeSubscribe includes the message at the attach serial, newest first', async () => {
    const name = fresh('before')
    const author = await joined(name, 'alice')
    const sent = []
    for (const text of ['m1', 'm2', 'm3']) sent.push(await author.messages.send({ text }))
    const bob = await (await chat('bob')).rooms.get(name)
    await bob.attach()
    // the attach serial is the channel's head: the last message sent
    expect(attachSerial(bob.channel)).toBe(sent[2]!.serial)
    const { historyBeforeSubscribe } = bob.messages.subscribe(() => {})
    const page = await historyBeforeSubscribe({ limit: 10 })
    expect(page.items.map((m) => [m.text, m.serial])).toEqual([...sent].reverse().map((m) => [m.text, m.serial]))
    // paging back from the attach serial one at a time gives the same messages
    const one = await historyBeforeSubscribe({ limit: 1 })
    expect(one.items.map((m) => m.text)).toEqual(['m3'])
    expect(one.hasNext()).toBe(true)
    const next = await one.next()
    expect(next!.items.map((m) => m.text)).toEqual(['m2'])
  })

  test("a JWT room claim is the userClaim of its holder's messages, their updates, presence and typing", async () => {
    const name = fresh('claims')
    const alice = await joined(name, 'alice', rt.port, { [`ably.room.${name}`]: 'mod', 'ably.room.*': 'anyone' })
    const bob = await joined(name, 'bob')
    const seen = collected<ChatMessageEvent>((cb) => bob.messages.subscribe(cb))
    const presence = collected<PresenceEvent>((cb) => bob.presence.subscribe(cb))
    const typing = collected<TypingSetEvent>((cb) => bob.typing.subscribe(cb))

    const sent = await alice.messages.send({ text: 'hi' })
    expect(sent.userClaim).toBe('mod')
    const updated = await alice.messages.update(sent.serial, { text: 'hi!' })
    expect(updated.userClaim).toBe('mod')
    const events = await seen.until(2)
    expect(events.map((e) => [e.type, e.message.userClaim])).toEqual([
      [ChatMessageEventType.Created, 'mod'],
      [ChatMessageEventType.Updated, 'mod'],
    ])
    expect((await bob.messages.get(sent.serial)).userClaim).toBe('mod')
    expect((await bob.messages.history({ limit: 10 })).items.map((m) => m.userClaim)).toEqual(['mod'])

    await alice.presence.enter({ here: true })
    const [entered] = await presence.until(1)
    expect([entered!.type, entered!.member.clientId, entered!.member.userClaim]).toEqual([
      PresenceEventType.Enter,
      'alice',
      'mod',
    ])
    await alice.typing.keystroke()
    const [started] = await typing.until(1)
    expect([started!.change.type, started!.change.userClaim]).toEqual([TypingEventType.Started, 'mod'])
  })

  test('a claim for another room, no claim, or one a client sends itself gives no userClaim', async () => {
    const name = fresh('noclaim')
    // a claim of another room (and of a namespace this room is not in)
    const alice = await joined(name, 'alice', rt.port, { 'ably.room.elsewhere': 'x', 'ably.room.ns:*': 'y' })
    const bob = await joined(name, 'bob')
    const seen = collected<ChatMessageEvent>((cb) => bob.messages.subscribe(cb))
    const presence = collected<PresenceEvent>((cb) => bob.presence.subscribe(cb))
    const typing = collected<TypingSetEvent>((cb) => bob.typing.subscribe(cb))
    const sent = await alice.messages.send({ text: 'hi' })
    expect(sent.userClaim).toBeUndefined()
    expect((await seen.until(1))[0]!.message.userClaim).toBeUndefined()
    // a client naming a claim itself, on a channel publish and a presence enter: dropped
    const raw = (await connectedClient(rt.port, { key: rt.gw.key, clientId: 'mallory' }, binary)).channels.get(
      `${name}::$chat`,
    )
    await raw.publish({ name: 'typing.started', extras: { ephemeral: true, userClaim: 'forged' } } as never)
    const [started] = await typing.until(1)
    expect([started!.change.clientId, started!.change.userClaim]).toEqual(['mallory', undefined])
    const { raw: frames } = await rawConnected(
      rt.base,
      { key: rt.gw.key, clientId: 'mallory' },
      binary ? 'msgpack' : 'json',
    )
    try {
      frames.send({ action: 10, channel: `${name}::$chat` })
      await frames.next((f) => f.action === 11)
      frames.send({
        action: 14,
        channel: `${name}::$chat`,
        msgSerial: 0,
        presence: [{ action: 2, extras: { userClaim: 'forged', kept: 1 } }],
      })
      await frames.next((f) => f.action === 1)
    } finally {
      frames.close()
    }
    await alice.presence.enter()
    const entered = await presence.until(2)
    expect(entered.map((e) => [e.member.clientId, e.member.userClaim, e.member.extras])).toEqual([
      ['mallory', undefined, { kept: 1 }],
      ['alice', undefined, undefined],
    ])
  })

  test('a namespace claim applies to its rooms; the exact room claim wins over it', async () => {
    const ns = fresh('ns')
    const claims = { [`ably.room.${ns}:*`]: 'in-ns', [`ably.room.${ns}:vip`]: 'vip', 'ably.room.*': 'anyone' }
    const inNs = await joined(`${ns}:lobby`, 'alice', rt.port, claims)
    expect((await inNs.messages.send({ text: 'a' })).userClaim).toBe('in-ns')
    const vip = await joined(`${ns}:vip`, 'alice', rt.port, claims)
    expect((await vip.messages.send({ text: 'b' })).userClaim).toBe('vip')
    const other = await joined(fresh('plain'), 'alice', rt.port, claims)
    expect((await other.messages.send({ text: 'c' })).userClaim).toBe('anyone')
  })
})
