/**
 * Annotations on the backend TEST_BACKEND names, msgpack and JSON: chat message reactions with
 * `@ably/chat` (latest 1.x, from npm) reach another client as summaries of each type and as raw
 * reactions (rawMessageReactions); pub/sub annotations with the official `ably` client (realtime
 * publish and delete, REST publish and paginated get, subscription with the annotation_subscribe
 * mode, summaries to plain subscribers and in history and getMessage); refusals; a restart.
 */
import { beforeAll, describe, expect, test } from 'bun:test'
import * as Ably from 'ably'
import {
  ChatClient,
  MessageReactionRawEventType,
  MessageReactionType,
  type MessageReactionRawEvent,
  type MessageReactionSummaryEvent,
} from '@ably/chat'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { addKey, APP_ID, createTestGateway } from '../helpers/gateway'
import { onRedis } from '../helpers/redis-cluster'
import { freshMutable, getMessage, messagesPath, mutableNamespace, publishOne } from '../helpers/mutable'
import { rawConnected, type RawClient } from '../helpers/realtime-raw'
import { connectedClient, cutSocket, FORMATS, fresh, realtimeGateway, secondNode } from '../helpers/realtime'
import { newConnectionId } from '../../src/core/auth/connection-keys'
import { Flag } from '../../src/core/connections/protocol'

const rt = realtimeGateway()
// annotations need the mutableMessages rule, as on the hosted service (93002 elsewhere)
beforeAll(() => mutableNamespace(rt.gw))
const other = secondNode(rt)

/** Everything `subscribe` hands over; `until(check)` resolves with the first item (from now on or already seen) `check` accepts. */
function seen<T>(subscribe: (cb: (x: T) => void) => void) {
  const items: T[] = []
  const waiters = new Set<() => void>()
  subscribe((x) => {
    items.push(x)
    for (const w of [...waiters]) w()
  })
  const until = (check: (x: T) => boolean, ms = 10000) =>
    new Promise<T>((resolve, reject) => {
      const look = () => {
        const hit = items.find(check)
        if (hit === undefined) return
        waiters.delete(look)
        clearTimeout(timer)
        resolve(hit)
      }
      const timer = setTimeout(() => {
        waiters.delete(look)
        // the check's source says which wait it was (a test may wait on several)
        const what = String(check).slice(0, 200)
        reject(new Error(`nothing matching ${what} within ${ms} ms; seen ${JSON.stringify(items).slice(0, 1500)}`))
      }, ms)
      waiters.add(look)
      look()
    })
  return { items, until }
}

describe.each(FORMATS)('@ably/chat message reactions over %s', (_format, binary) => {
  const room = async (name: string, clientId: string, raw = false) => {
    const chat = new ChatClient(await connectedClient(rt.port, { key: rt.gw.key, clientId }, binary), {
      logLevel: 'silent' as never,
    })
    const r = await chat.rooms.get(name, { messages: { rawMessageReactions: raw } })
    await r.attach()
    return r
  }

  test('summaries of each type and raw reactions reach another client', async () => {
    const name = fresh('mreact')
    const alice = await room(name, 'alice')
    const bob = await room(name, 'bob', true)
    const summaries = seen<MessageReactionSummaryEvent>((cb) => bob.messages.reactions.subscribe(cb))
    const raws = seen<MessageReactionRawEvent>((cb) => bob.messages.reactions.subscribeRaw(cb))
    const msg = await alice.messages.send({ text: 'react to me' })
    const r = alice.messages.reactions

    await r.send(msg.serial, { name: '❤️', type: MessageReactionType.Distinct })
    await r.send(msg.serial, { name: '❤️', type: MessageReactionType.Distinct })
    await r.send(msg.serial, { name: '👍', type: MessageReactionType.Unique })
    await r.send(msg.serial, { name: '🚀', type: MessageReactionType.Unique })
    await r.send(msg.serial, { name: '❤️', type: MessageReactionType.Unique })
    await r.send(msg.serial, { name: '👍', type: MessageReactionType.Multiple })
    await r.send(msg.serial, { name: '👍', type: MessageReactionType.Multiple, count: 10 })
    const last = await summaries.until((e) => e.reactions.multiple['👍']?.total === 11)
    expect(last.messageSerial).toBe(msg.serial)
    expect(last.reactions.distinct).toEqual({ '❤️': { total: 1, clientIds: ['alice'], clipped: false } })
    expect(last.reactions.unique).toEqual({ '❤️': { total: 1, clientIds: ['alice'], clipped: false } })
    expect(last.reactions.multiple['👍']).toMatchObject({ total: 11, clientIds: { alice: 11 } })

    await raws.until((e) => e.reaction.type === MessageReactionType.Multiple && e.reaction.count === 10)
    expect(raws.items[0]!.type).toBe(MessageReactionRawEventType.Create)
    expect(raws.items[0]!.reaction).toMatchObject({
      messageSerial: msg.serial,
      type: MessageReactionType.Distinct,
      name: '❤️',
      clientId: 'alice',
    })

    await r.delete(msg.serial, { name: '❤️', type: MessageReactionType.Distinct })
    await summaries.until((e) => e.reactions.distinct['❤️'] === undefined && e.reactions.multiple['👍']?.total === 11)
    await raws.until((e) => e.type === MessageReactionRawEventType.Delete)
    // the message read back carries the summary
    const read = await bob.messages.get(msg.serial)
    expect(read.reactions.unique['❤️']?.clientIds).toEqual(['alice'])
    // clientReactions: the names a client contributed to, room-wide totals, that client alone
    await bob.messages.reactions.send(msg.serial, { name: '👍', type: MessageReactionType.Multiple, count: 2 })
    expect(await alice.messages.reactions.clientReactions(msg.serial, 'bob')).toEqual({
      unique: {},
      distinct: {},
      multiple: { '👍': { total: 13, clientIds: { bob: 2 }, totalUnidentified: 0, clipped: false, totalClientIds: 2 } },
    })
    expect((await bob.messages.reactions.clientReactions(msg.serial)).multiple['👍']?.clientIds).toEqual({ bob: 2 })
  })

  test('an attachment without the annotation_subscribe mode gets the summary and no raw reaction', async () => {
    const name = fresh('mreact-noraw')
    const alice = await room(name, 'alice')
    const { raw } = await rawConnected(rt.base, { key: rt.gw.key, clientId: 'bob' }, binary ? 'msgpack' : 'json')
    raw.send({ action: 10, channel: `${name}::$chat` })
    await raw.next((pm) => pm.action === 11)
    const msg = await alice.messages.send({ text: 'x' })
    await alice.messages.reactions.send(msg.serial, { name: '👍', type: MessageReactionType.Distinct })
    const summary = await raw.next((pm) => pm.action === 15 && pm.messages[0].action === 4)
    expect(summary.messages[0].serial).toBe(msg.serial)
    // it names the summary's own place in the channel (RTL15b: the client's position follows it)
    expect(summary.channelSerial > msg.serial).toBe(true)
    expect(summary.messages[0].annotations.summary['reaction:distinct.v1']).toEqual({
      '👍': { total: 1, clientIds: ['alice'], clipped: false },
    })
    // the annotation went out before its summary, in channel order: none came here
    expect(raw.frames.filter((pm) => pm.action === 21)).toEqual([])
  })
})

describe.each(FORMATS)('pub/sub annotations over %s', (_format, binary) => {
  let marker = 0
  /**
   * The errors a resumed raw connection is told when it attaches `channel` from `position`:
   * ATTACHED must resume, and a message published after it marks the end of what the attach told.
   */
  const toldOnAttach = async (raw: RawClient, channel: string, position: string, flags: number) => {
    raw.send({ action: 10, channel, channelSerial: position, flags })
    const attached = await raw.next((pm) => pm.action === 11 && pm.channel === channel)
    expect(attached.flags & Flag.RESUMED).toBe(Flag.RESUMED)
    const name = `after-${marker++}`
    await publishOne(rt.gw, channel, { name, data: 'y' })
    await raw.next((pm) => pm.action === 15 && pm.messages.some((m: { name?: string }) => m.name === name))
    raw.close()
    return raw.frames.filter((pm) => pm.action === 11 && pm.error).map((pm) => pm.error.code)
  }

  test('realtime publish and delete, subscription with the mode, summaries to subscribers, REST get pages', async () => {
    const channelName = freshMutable('ann')
    const pub = await connectedClient(rt.port, { key: rt.gw.key, clientId: 'ann' }, binary)
    const sub = await connectedClient(rt.port, { key: rt.gw.key, clientId: 'sub' }, binary)
    const pubCh = pub.channels.get(channelName)
    const subCh = sub.channels.get(channelName, { modes: ['SUBSCRIBE', 'ANNOTATION_SUBSCRIBE'] })
    const annotations = seen<Ably.Annotation>((cb) => void subCh.annotations.subscribe(cb))
    const messages = seen<Ably.InboundMessage>((cb) => void subCh.subscribe(cb))
    await subCh.attach()
    await pubCh.publish('m', 'annotate me')
    const original = await messages.until((m) => m.name === 'm')

    await pubCh.annotations.publish(original.serial!, { type: 'emoji:distinct.v1', name: '👍' })
    await pubCh.annotations.publish(original.serial!, { type: 'metrics:total.v1' })
    await pubCh.annotations.publish(original.serial!, { type: 'votes:multiple.v1', name: 'up', count: 3 })
    await pubCh.annotations.publish(original.serial!, { type: 'receipts:flag.v1' })
    const a = await annotations.until((x) => x.type === 'emoji:distinct.v1')
    expect(a).toMatchObject({
      action: 'annotation.create',
      name: '👍',
      clientId: 'ann',
      messageSerial: original.serial,
    })
    expect(a.serial! > original.serial!).toBe(true)
    const summary = await messages.until(
      (m) => m.action === 'message.summary' && (m.annotations?.summary['receipts:flag.v1'] as unknown) !== undefined,
    )
    expect(summary.serial).toBe(original.serial)
    expect(summary.annotations!.summary).toEqual({
      'emoji:distinct.v1': { '👍': { total: 1, clientIds: ['ann'], clipped: false } },
      'metrics:total.v1': { total: 1 },
      'votes:multiple.v1': {
        up: { total: 3, clientIds: { ann: 3 }, totalUnidentified: 0, clipped: false, totalClientIds: 1 },
      },
      'receipts:flag.v1': { total: 1, clientIds: ['ann'], clipped: false },
    })

    await pubCh.annotations.delete(original.serial!, { type: 'emoji:distinct.v1', name: '👍' })
    await annotations.until((x) => x.action === 'annotation.delete')
    await messages.until(
      (m) =>
        m.action === 'message.summary' &&
        m.annotations!.summary['emoji:distinct.v1'] === undefined &&
        m.annotations!.summary['metrics:total.v1'] !== undefined,
    )

    // REST: publish, then the list oldest first in pages
    const rest = new Ably.Rest({
      key: rt.gw.key,
      clientId: 'resty',
      endpoint: '127.0.0.1',
      port: rt.port,
      tls: false,
      useBinaryProtocol: binary,
      logLevel: 0,
    })
    const restCh = rest.channels.get(channelName)
    await restCh.annotations.publish(original.serial!, { type: 'emoji:distinct.v1', name: '🎉' })
    await annotations.until((x) => x.name === '🎉' && x.clientId === 'resty')
    const first = await restCh.annotations.get(original.serial!, { limit: 4 })
    expect(first.items.map((x) => x.type)).toEqual([
      'emoji:distinct.v1',
      'metrics:total.v1',
      'votes:multiple.v1',
      'receipts:flag.v1',
    ])
    const second = await first.next()
    expect(second!.items.map((x) => [x.action, x.name])).toEqual([
      ['annotation.delete', '👍'],
      ['annotation.create', '🎉'],
    ])
    expect((await second!.first()).items).toHaveLength(4)
    // history and getMessage carry the message's summary
    const expected = {
      'emoji:distinct.v1': { '🎉': { total: 1, clientIds: ['resty'], clipped: false } },
      'metrics:total.v1': { total: 1 },
      'votes:multiple.v1': {
        up: { total: 3, clientIds: { ann: 3 }, totalUnidentified: 0, clipped: false, totalClientIds: 1 },
      },
      'receipts:flag.v1': { total: 1, clientIds: ['ann'], clipped: false },
    }
    const [inHistory] = (await restCh.history({ limit: 1 })).items
    expect(inHistory!.serial).toBe(original.serial)
    expect(inHistory!.annotations?.summary).toEqual(expected)
    expect((await restCh.getMessage(original.serial!)).annotations?.summary).toEqual(expected)
  })

  test.skipIf(!onRedis())('annotations made at once on two nodes: the last summary is the final state', async () => {
    const channelName = freshMutable('ann-race')
    const clients = await Promise.all(
      ['a1', 'a2', 'a3', 'b1', 'b2', 'b3'].map((c) =>
        connectedClient(c.startsWith('a') ? rt.port : other.port!, { key: rt.gw.key, clientId: c }, binary),
      ),
    )
    const watcher = (await connectedClient(other.port!, { key: rt.gw.key, clientId: 'w' }, binary)).channels.get(
      channelName,
    )
    const messages = seen<Ably.InboundMessage>((cb) => void watcher.subscribe(cb))
    await watcher.attach()
    await clients[0]!.channels.get(channelName).publish('m', 'x')
    const original = await messages.until((m) => m.name === 'm')
    await Promise.all(
      clients.flatMap((c, i) => [
        c.channels
          .get(channelName)
          .annotations.publish(original.serial!, { type: 'v:multiple.v1', name: 'n', count: i + 1 }),
        c.channels
          .get(channelName)
          .annotations.publish(original.serial!, { type: 'u:unique.v1', name: i % 2 ? 'x' : 'y' }),
      ]),
    )
    const final = (await rt.rest({ binary }).channels.get(channelName).getMessage(original.serial!)).annotations!
      .summary
    expect((final['v:multiple.v1'] as Record<string, { total: number }>).n!.total).toBe(21)
    // summaries are coalesced (one per ANNOTATION_SUMMARY_INTERVAL_MS per node): the last one comes
    const lastSummary = () => messages.items.filter((m) => m.action === 'message.summary').pop()?.annotations?.summary
    for (let i = 0; i < 1000 && JSON.stringify(lastSummary()) !== JSON.stringify(final); i++) await Bun.sleep(10)
    // and nothing older follows it (a round still under way reads the final state too)
    await clients[0]!.channels.get(channelName).publish('after', 'x')
    await messages.until((m) => m.name === 'after')
    expect(lastSummary()).toEqual(final)
  })

  test('a subscriber without the annotation_subscribe mode gets summaries, no annotations', async () => {
    const channelName = freshMutable('ann-nomode')
    const client = await connectedClient(rt.port, { key: rt.gw.key, clientId: 'x' }, binary)
    const ch = client.channels.get(channelName)
    const messages = seen<Ably.InboundMessage>((cb) => void ch.subscribe(cb))
    await ch.attach()
    expect(ch.modes).not.toContain('ANNOTATION_SUBSCRIBE')
    await ch.publish('m', 'x')
    const m = await messages.until((x) => x.name === 'm')
    await ch.annotations.publish(m.serial!, { type: 'r:distinct.v1', name: 'a' })
    await messages.until((x) => x.action === 'message.summary')
  })

  test('refusals: no capability, a type too long, a missing name, no mutableMessages rule, a chat room channel', async () => {
    const channelName = freshMutable('ann-refused')
    const client = await connectedClient(rt.port, { key: rt.gw.key, clientId: 'x' }, binary)
    const ch = client.channels.get(channelName)
    await ch.attach()
    const serial = (await ch.publish('m', 'x'), (await ch.history()).items[0]!.serial!)
    await expect(ch.annotations.publish(serial, { type: 't'.repeat(256) })).rejects.toMatchObject({ code: 40003 })
    await expect(ch.annotations.publish(serial, { type: 'r:distinct.v1' })).rejects.toMatchObject({ code: 40003 })
    await expect(ch.annotations.publish('s'.repeat(200), { type: 'r:total.v1' })).rejects.toMatchObject({ code: 40003 })
    const plain = client.channels.get(fresh('plain'))
    await plain.publish('m', 'x')
    await expect(plain.annotations.publish(serial, { type: 'r:distinct.v1', name: 'a' })).rejects.toMatchObject({
      code: 93002,
    })
    const room = client.channels.get(`${fresh('room')}::$chat`)
    await expect(room.annotations.publish(serial, { type: 'reaction:distinct.v1', name: 'a' })).rejects.toMatchObject({
      code: 40160,
    })
    const key = await addKey(rt.gw, fresh('noann'), { capability: { [channelName]: ['publish', 'subscribe'] } })
    const limited = (await connectedClient(rt.port, { key, clientId: 'y' }, binary)).channels.get(channelName)
    await expect(limited.annotations.publish(serial, { type: 'r:distinct.v1', name: 'a' })).rejects.toMatchObject({
      code: 40160,
    })
  })

  test('types of no known summarization (com.ably.reactions): delivered, filtered by type, listed, not summarised', async () => {
    const channelName = freshMutable('ann-types')
    const a = await connectedClient(rt.port, { key: rt.gw.key, clientId: 'a' }, binary)
    const b = await connectedClient(rt.port, { key: rt.gw.key, clientId: 'b' }, binary)
    const chA = a.channels.get(channelName, {
      modes: ['PUBLISH', 'SUBSCRIBE', 'ANNOTATION_PUBLISH', 'ANNOTATION_SUBSCRIBE'],
    })
    const chB = b.channels.get(channelName, { modes: ['SUBSCRIBE', 'ANNOTATION_SUBSCRIBE'] })
    await chB.attach()
    const reactions = seen<Ably.Annotation>((cb) => void chB.annotations.subscribe('com.ably.reactions', cb))
    const all = seen<Ably.Annotation>((cb) => void chB.annotations.subscribe(cb))
    const messages = seen<Ably.InboundMessage>((cb) => void chB.subscribe(cb))
    await chA.attach()
    await chA.publish('m', 'annotate me')
    const serial = (await messages.until((m) => m.name === 'm')).serial!

    await chA.annotations.publish(serial, { type: 'com.ably.reactions', name: 'like' })
    await chA.annotations.publish(serial, { type: 'com.example.comments', name: 'comment', data: 'nice one' })
    await chA.annotations.publish(serial, { type: 'com.ably.reactions', name: 'heart' })
    // a summarization of no known version, and no name at all
    await chA.annotations.publish(serial, { type: 'votes:distinct.v2' })
    await chA.annotations.delete(serial, { type: 'com.ably.reactions', name: 'like' })
    await all.until((x) => x.action === 'annotation.delete')
    expect(all.items.map((x) => [x.action, x.type, x.name ?? null])).toEqual([
      ['annotation.create', 'com.ably.reactions', 'like'],
      ['annotation.create', 'com.example.comments', 'comment'],
      ['annotation.create', 'com.ably.reactions', 'heart'],
      ['annotation.create', 'votes:distinct.v2', null],
      ['annotation.delete', 'com.ably.reactions', 'like'],
    ])
    expect(all.items[1]!.data).toBe('nice one')
    expect(all.items.every((x) => x.messageSerial === serial && x.clientId === 'a')).toBe(true)
    expect(reactions.items.map((x) => [x.action, x.name])).toEqual([
      ['annotation.create', 'like'],
      ['annotation.create', 'heart'],
      ['annotation.delete', 'like'],
    ])
    // REST: published and listed the same way
    const rest = rt.rest({ binary })
    await rest.channels.get(channelName).annotations.publish(serial, { type: 'com.ably.reactions', name: 'rest' })
    const listed = await rest.channels.get(channelName).annotations.get(serial, {})
    expect(listed.items.map((x) => [x.type, x.name ?? null])).toEqual([
      ['com.ably.reactions', 'like'],
      ['com.example.comments', 'comment'],
      ['com.ably.reactions', 'heart'],
      ['votes:distinct.v2', null],
      ['com.ably.reactions', 'like'],
      ['com.ably.reactions', 'rest'],
    ])
    // none of them is in the summary: a summarised type's summary holds only itself
    await chA.annotations.publish(serial, { type: 'emoji:distinct.v1', name: '👍' })
    const summary = await messages.until((m) => m.action === 'message.summary')
    expect(summary.annotations!.summary).toEqual({
      'emoji:distinct.v1': { '👍': { total: 1, clientIds: ['a'], clipped: false } },
    })
    expect(messages.items.filter((m) => m.action === 'message.summary')).toHaveLength(1)
    expect((await rest.channels.get(channelName).getMessage(serial)).annotations?.summary).toEqual(
      summary.annotations!.summary,
    )
  })

  test('a subscriber that resumes gets the annotations and summary its channel got while it was away, none twice', async () => {
    const channelName = freshMutable('ann-resume')
    const serial = await publishOne(rt.gw, channelName, { name: 'm', data: 'x' })
    const client = await connectedClient(rt.port, { key: rt.gw.key, clientId: 'sub' }, binary)
    const ch = client.channels.get(channelName, {
      modes: ['PUBLISH', 'SUBSCRIBE', 'ANNOTATION_PUBLISH', 'ANNOTATION_SUBSCRIBE'],
    })
    const annotations = seen<Ably.Annotation>((cb) => void ch.annotations.subscribe(cb))
    const messages = seen<Ably.InboundMessage>((cb) => void ch.subscribe(cb))
    const updates: unknown[] = []
    ch.on('update', (c) => updates.push(c.reason?.code))
    await ch.attach()
    const rest = rt.rest({ binary })
    await rest.channels.get(channelName).annotations.publish(serial, { type: 'v:multiple.v1', name: 'before' })
    await annotations.until((x) => x.name === 'before')
    const names = (m: Ably.InboundMessage) => Object.keys(m.annotations?.summary?.['v:multiple.v1'] ?? {}).sort()
    // its summary too: one sent as the socket is cut may not arrive, which the resume would tell (80020)
    await messages.until((m) => m.action === 'message.summary' && names(m).join() === 'before')
    const id = client.connection.id!
    // the server cuts the socket (as a network would); while the client is away, another client
    // annotates, and the client's own annotation waits in its queue until it has resumed (it is
    // sent before the channel's ATTACH): no log keeps either for the resume's replay
    cutSocket(rt.gw, id)
    await rest.channels.get(channelName).annotations.publish(serial, { type: 'v:multiple.v1', name: 'away' })
    const own = ch.annotations.publish(serial, { type: 'v:multiple.v1', name: 'own' })
    await own
    await annotations.until((x) => x.name === 'own')
    await annotations.until((x) => x.name === 'away')
    await messages.until((m) => m.action === 'message.summary' && names(m).join() === 'away,before,own')
    expect(client.connection.id).toBe(id) // resumed, not a new connection
    expect(annotations.items.map((x) => x.name).sort()).toEqual(['away', 'before', 'own'])
    expect(updates).toEqual([])
  })

  test('a resume with nothing of its connection kept here is told of annotations or summaries it missed (80020), of none it saw', async () => {
    const channel = freshMutable('ann-elsewhere')
    const serial = await publishOne(rt.gw, channel, { name: 'm', data: 'x' })
    const format = binary ? 'msgpack' : 'json'
    const both = Flag.SUBSCRIBE | Flag.ANNOTATION_SUBSCRIBE
    const { raw: seer } = await rawConnected(rt.base, { key: rt.gw.key }, format)
    seer.send({ action: 10, channel, flags: both })
    await seer.next((pm) => pm.action === 11 && pm.channel === channel)
    await rt.rest({ binary }).channels.get(channel).annotations.publish(serial, { type: 'v:multiple.v1', name: 'a' })
    // each frame names its entry's place in the channel: a client's position follows what it received
    const annotation = (await seer.next((pm) => pm.action === 21)).channelSerial as string
    const summary = (await seer.next((pm) => pm.action === 15 && pm.messages[0].action === 4)).channelSerial as string
    expect(annotation > serial).toBe(true)
    expect(summary > annotation).toBe(true)
    seer.close()
    // the summary's mark is written once it went out
    for (let waited = 0; waited < 10_000; waited += 20) {
      if (await rt.gw.core.annotations.missedSince(APP_ID, channel, annotation, ['summary'])) break
      await Bun.sleep(20)
    }
    const principal = await rt.gw.core.auth.authenticate({ key: rt.gw.key, secure: () => false })
    /** The errors a connection this node never saw (as after a drop on another node) is told when it attaches from `position`. */
    const toldFrom = async (position: string, flags: number) => {
      const resume = await rt.gw.core.connectionKeys.issue(newConnectionId(), principal)
      const { raw } = await rawConnected(rt.base, { key: rt.gw.key, resume }, format)
      return toldOnAttach(raw, channel, position, flags)
    }
    // from before the annotation: it and its summary were missed
    expect(await toldFrom(serial, both)).toEqual([80020])
    // from the summary: nothing missed (nor from later, a message published since)
    expect(await toldFrom(summary, both)).toEqual([])
    // from the annotation, without the annotation_subscribe mode: the summary was missed
    expect(await toldFrom(annotation, Flag.SUBSCRIBE)).toEqual([80020])
  })

  test('a resume on the same node from before an annotation or summary sent as it dropped is told it missed it (80020)', async () => {
    const channel = freshMutable('ann-inflight')
    const serial = await publishOne(rt.gw, channel, { name: 'm', data: 'x' })
    const format = binary ? 'msgpack' : 'json'
    const flags = Flag.SUBSCRIBE | Flag.ANNOTATION_SUBSCRIBE
    const clients = await Promise.all([0, 1].map(() => rawConnected(rt.base, { key: rt.gw.key }, format)))
    for (const { raw } of clients) {
      raw.send({ action: 10, channel, flags })
      await raw.next((pm) => pm.action === 11 && pm.channel === channel)
    }
    await rt.rest({ binary }).channels.get(channel).annotations.publish(serial, { type: 'v:multiple.v1', name: 'a' })
    let summary = ''
    for (const { raw } of clients) {
      await raw.next((pm) => pm.action === 21)
      summary = (await raw.next((pm) => pm.action === 15 && pm.messages[0].action === 4)).channelSerial
    }
    /** The errors a client is told when it resumes its connection and attaches from `position`. */
    const toldFrom = async (client: (typeof clients)[number], position: string) => {
      const id = client.connected.connectionId as string
      cutSocket(rt.gw, id)
      client.raw.close()
      const resume = client.connected.connectionDetails.connectionKey as string
      const { raw, connected } = await rawConnected(rt.base, { key: rt.gw.key, resume }, format)
      expect(connected.connectionId).toBe(id)
      return toldOnAttach(raw, channel, position, flags)
    }
    // it received both: nothing to tell
    expect(await toldFrom(clients[0]!, summary)).toEqual([])
    // as if the socket had lost them: its position before them
    expect(await toldFrom(clients[1]!, serial)).toEqual([80020])
  })

  test('a connection that drops keeps for its resume only the channels that may carry annotations or summaries', async () => {
    const { raw, connected } = await rawConnected(rt.base, { key: rt.gw.key }, binary ? 'msgpack' : 'json')
    // a mutable namespace's channel, a chat room's, one of a namespace without the rule, one of none
    const mutable = freshMutable('ann-keep')
    const chat = `${fresh('keep-room')}::$chat`
    const plain = [`nomut:${fresh('keep')}`, fresh('keep')]
    for (const channel of [mutable, chat, ...plain]) {
      raw.send({ action: 10, channel })
      await raw.next((pm) => pm.action === 11 && pm.channel === channel)
    }
    const hub = rt.gw.core.hub
    for (const channel of [mutable, chat, ...plain]) expect(hub.count(APP_ID, channel)).toBe(1)
    cutSocket(rt.gw, connected.connectionId) // abruptly, as a network would: it may resume
    // its attachments end together when the server sees the socket closed; the keepers are made then
    for (let waited = 0; hub.count(APP_ID, plain[1]!) > 0 && waited < 10_000; waited += 20) await Bun.sleep(20)
    expect([mutable, chat, ...plain].map((channel) => hub.count(APP_ID, channel))).toEqual([1, 1, 0, 0])
    raw.close()
  })

  test('a connection that drops again before attaching every channel again keeps them all within one budget', async () => {
    const format = binary ? 'msgpack' : 'json'
    const { raw, connected } = await rawConnected(rt.base, { key: rt.gw.key }, format)
    const [a, b] = [freshMutable('ann-twice-a'), freshMutable('ann-twice-b')]
    const attach = async (client: typeof raw, channel: string) => {
      client.send({ action: 10, channel })
      await client.next((pm) => pm.action === 11 && pm.channel === channel)
    }
    await attach(raw, a)
    await attach(raw, b)
    const id = connected.connectionId as string
    const realtime = rt.gw.server!.realtime
    const first = realtime.connection(id)!
    cutSocket(rt.gw, id)
    for (let waited = 0; !first.leftKeepers && waited < 10_000; waited += 20) await Bun.sleep(20)
    const budget = first.leftKeepers!.get(a)!.budget
    expect(first.leftKeepers!.get(b)!.budget).toBe(budget)
    // resumed; only b attached again, so a's keeper still waits for it
    const resume = connected.connectionDetails.connectionKey as string
    const again = await rawConnected(rt.base, { key: rt.gw.key, resume }, format)
    expect(again.connected.connectionId).toBe(id)
    await attach(again.raw, b)
    const second = realtime.connection(id)!
    cutSocket(rt.gw, id)
    for (let waited = 0; !second.leftKeepers && waited < 10_000; waited += 20) await Bun.sleep(20)
    const left = second.leftKeepers!
    expect([...left.keys()].sort()).toEqual([a, b].sort())
    // b's new keeper shares the budget of a's, kept since the first drop
    expect(left.get(a)!.budget).toBe(budget)
    expect(left.get(b)!.budget).toBe(budget)
    raw.close()
    again.raw.close()
  })

  /**
   * The scenario once; `dropped` is set when the client's connection dropped meanwhile. Bun's
   * WebSocket client now and then misreads this test's ~50 KB summary frames in a long test
   * process ("Invalid WebSocket frame: RSV2 and RSV3 must be clear", 2 in ~120 runs of it after
   * test/realtime and test/sdk; a validating TCP proxy between them found every frame the server
   * sent well formed): the client then resumes, which this scenario does not expect (what the
   * resume hands on is the test above's).
   */
  const entryCap = async (dropped: { value: boolean }) => {
    const channelName = freshMutable('ann-cap')
    const serial = await publishOne(rt.gw, channelName, { name: 'm', data: 'x' })
    // 1,000 entries: multiple.v1 names of unidentified clients, 100 per request
    for (let from = 0; from < 1000; from += 100) {
      const body = Array.from({ length: 100 }, (_, i) => ({ type: 'v:multiple.v1', name: `n${from + i}` }))
      const r = await rt.gw.request(messagesPath(channelName, `/${serial}/annotations`), { method: 'POST', json: body })
      expect(r.status).toBe(201)
    }
    // unidentified, as the entries' contributors were
    const client = await connectedClient(rt.port, { key: rt.gw.key }, binary)
    client.connection.on('disconnected', () => (dropped.value = true))
    const ch = client.channels.get(channelName, {
      modes: ['PUBLISH', 'SUBSCRIBE', 'ANNOTATION_PUBLISH', 'ANNOTATION_SUBSCRIBE'],
    })
    const annotations = seen<Ably.Annotation>((cb) => void ch.annotations.subscribe(cb))
    const messages = seen<Ably.InboundMessage>((cb) => void ch.subscribe(cb))
    // a failed wait says what the channel was told meanwhile (an 80020 would say the annotation was held back)
    const updates: unknown[] = []
    ch.on('update', (c) => updates.push({ reason: c.reason?.code, message: c.reason?.message }))
    const told = (e: Error) => {
      throw new Error(`${e.message}; channel ${ch.state}, updates ${JSON.stringify(updates)}`)
    }
    await ch.attach()
    // a new entry is refused (realtime and REST), one adding to an entry is taken
    await expect(ch.annotations.publish(serial, { type: 'v:multiple.v1', name: 'over' })).rejects.toMatchObject({
      code: 40003,
    })
    const r = await rt.gw.request(messagesPath(channelName, `/${serial}/annotations`), {
      method: 'POST',
      json: { type: 'v:multiple.v1', name: 'over-rest' },
    })
    expect(r.status).toBe(400)
    await ch.annotations.publish(serial, { type: 'v:multiple.v1', name: 'n0', count: 2 })
    await annotations.until((x) => x.name === 'n0').catch(told)
    // the summary that counts it (one the REST entries made may still be on its way at the attach)
    const namesOf = (m: Ably.InboundMessage) =>
      m.annotations?.summary?.['v:multiple.v1'] as Record<string, { total: number }> | undefined
    const summary = await messages
      .until((m) => m.action === 'message.summary' && namesOf(m)?.n0?.total === 3)
      .catch(told)
    expect(annotations.items.map((x) => x.name)).toEqual(['n0'])
    const names = namesOf(summary)!
    expect(names.over).toBeUndefined()
    expect(names['over-rest']).toBeUndefined()
    const list = (await (
      await rt.gw.request(messagesPath(channelName, `/${serial}/annotations?limit=1000&cursor=900`))
    ).json()) as Array<{ name: string }>
    expect(list.map((x) => x.name).slice(-2)).toEqual(['n999', 'n0'])
  }

  test('an annotation refused (the message at its entry cap) is not delivered, nor summarised', async () => {
    // run again (once) only when the client's connection dropped during the first run
    const dropped = { value: false }
    try {
      await entryCap(dropped)
    } catch (e) {
      if (!dropped.value) throw e
      await entryCap({ value: false })
    }
  })
})

test('annotations and their summary survive a restart (persisted namespace)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'gw-ann-'))
  const ch = `keep:${fresh('restart')}`
  const namespace = { appId: APP_ID, id: 'keep', persisted: true, pushEnabled: false, mutableMessages: true }
  const first = await createTestGateway({ dataDir: dir })
  let serial: string
  try {
    await first.backend.control.putNamespace(namespace)
    serial = await publishOne(first, ch, { name: 'm', data: 'x' })
    for (const body of [{ type: 'views:total.v1' }, { type: 'votes:multiple.v1', name: 'up', count: 2 }]) {
      const r = await first.request(messagesPath(ch, `/${serial}/annotations`), { method: 'POST', json: body })
      expect(r.status).toBe(201)
    }
  } finally {
    await first.close()
  }
  const second = await createTestGateway({ dataDir: dir })
  try {
    const r = await second.request(messagesPath(ch, `/${serial}/annotations`), {
      method: 'POST',
      json: { type: 'views:total.v1' },
    })
    expect(r.status).toBe(201)
    const m = await getMessage(second, ch, serial)
    expect(m.annotations.summary).toEqual({
      'views:total.v1': { total: 2 },
      'votes:multiple.v1': {
        up: { total: 2, clientIds: {}, totalUnidentified: 2, clipped: false, totalClientIds: 0 },
      },
    })
    const list = (await (await second.request(messagesPath(ch, `/${serial}/annotations`))).json()) as Array<{
      type: string
    }>
    expect(list.map((a) => a.type)).toEqual(['views:total.v1', 'votes:multiple.v1', 'views:total.v1'])
  } finally {
    await second.close()
    rmSync(dir, { recursive: true, force: true })
  }
})
