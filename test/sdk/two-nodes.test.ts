/**
 * Two gateway processes (`bun src/main.ts`, as deployed) on one Redis (TEST_BACKEND=redis or
 * redis-cluster; skipped on the embedded backend, which is one node): with `@ably/chat` (latest
 * 1.x, from npm), msgpack and JSON, a typing indicator, a message reaction summary and an
 * occupancy event produced on node A reach a client on node B.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import {
  ChatClient,
  MessageReactionType,
  type ChatMessageEvent,
  type MessageReactionSummaryEvent,
  type OccupancyEvent,
  type TypingSetEvent,
} from '@ably/chat'
import { ROOT_KEY } from '../helpers/gateway'
import { GatewayNode } from '../helpers/node-process'
import { backendEnvFor, onRedis } from '../helpers/redis-cluster'
import { closeClients, connectedClient, firstOf, FORMATS, fresh } from '../helpers/realtime'

let a: GatewayNode
let b: GatewayNode
beforeAll(async () => {
  if (!onRedis()) return
  const env = await backendEnvFor(`two-nodes-${Date.now()}:`)
  ;[a, b] = await Promise.all([GatewayNode.start(env), GatewayNode.start(env)])
}, 60_000)
afterAll(async () => {
  closeClients()
  await Promise.all([a?.stop(), b?.stop()])
})

describe.skipIf(!onRedis()).each(FORMATS)('two nodes, @ably/chat over %s', (_format, binary) => {
  const room = async (node: GatewayNode, name: string, clientId: string, occupancy = false) => {
    const chat = new ChatClient(await connectedClient(node.port, { key: ROOT_KEY, clientId }, binary), {
      logLevel: 'silent' as never,
    })
    const r = await chat.rooms.get(name, { occupancy: { enableEvents: occupancy } })
    await r.attach()
    return r
  }

  test('a typing indicator on node A reaches a client on node B', async () => {
    const name = fresh('nodes-typing')
    const onA = await room(a, name, 'alice')
    const onB = await room(b, name, 'bob')
    const started = firstOf<TypingSetEvent>(
      (cb) => onB.typing.subscribe(cb),
      (e) => e.change.clientId === 'alice' && e.change.type === 'typing.started',
    )
    await onA.typing.keystroke()
    expect([...(await started).currentlyTyping]).toEqual(['alice'])
  })

  test('a reaction summary made on node A reaches a client on node B', async () => {
    const name = fresh('nodes-react')
    const onA = await room(a, name, 'alice')
    const onB = await room(b, name, 'bob')
    const msg = await onA.messages.send({ text: 'hi' })
    const summary = firstOf<MessageReactionSummaryEvent>(
      (cb) => onB.messages.reactions.subscribe(cb),
      (e) => e.reactions.multiple['🔥']?.total === 4,
    )
    await onA.messages.reactions.send(msg.serial, { name: '🔥', type: MessageReactionType.Multiple, count: 4 })
    const e = await summary
    expect(e.messageSerial).toBe(msg.serial)
    expect(e.reactions.multiple['🔥']).toMatchObject({ total: 4, clientIds: { alice: 4 } })
  })

  test('reactions made at once on both nodes: the last summary a client gets is the final one', async () => {
    const name = fresh('nodes-race')
    const rooms = await Promise.all(
      ['a1', 'a2', 'a3', 'b1', 'b2', 'b3'].map((c) => room(c.startsWith('a') ? a : b, name, c)),
    )
    const watcher = await room(b, name, 'watcher')
    const summaries: MessageReactionSummaryEvent[] = []
    watcher.messages.reactions.subscribe((e) => summaries.push(e))
    const msg = await rooms[0]!.messages.send({ text: 'race' })
    await Promise.all(
      rooms.flatMap((r, i) => [
        r.messages.reactions.send(msg.serial, { name: '🔥', type: MessageReactionType.Multiple, count: i + 1 }),
        r.messages.reactions.send(msg.serial, { name: i % 2 ? '👍' : '🚀', type: MessageReactionType.Unique }),
      ]),
    )
    const final = (await watcher.messages.get(msg.serial)).reactions
    expect(final.multiple['🔥']?.total).toBe(21)
    // A node's summary round may read before the other node's change is stored and land after
    // that node's newer summary (summaries are sent after the reaction calls return, each node
    // coalescing its own, one per ANNOTATION_SUMMARY_INTERVAL_MS): what each node guarantees is
    // that its last round reads the current state. So the last summary a client gets converges
    // to the final one and stays there: checked after a quiet spell longer than two intervals
    // (a round under way lands within it) and a message sent after it.
    const last = () => summaries[summaries.length - 1]?.reactions
    const converged = async () => {
      for (let i = 0; i < 1000 && !Bun.deepEquals(last(), final); i++) await Bun.sleep(10)
    }
    await converged()
    await Bun.sleep(600)
    const sentinel = firstOf<ChatMessageEvent>(
      (cb) => watcher.messages.subscribe(cb),
      (e) => e.message.text === 'after',
    )
    await rooms[0]!.messages.send({ text: 'after' })
    await sentinel
    await converged()
    expect(last()).toEqual(final)
  })

  test('an occupancy change on node A reaches a watcher on node B, with one count across nodes', async () => {
    const name = fresh('nodes-occ')
    const onB = await room(b, name, 'bob', true)
    const two = firstOf<OccupancyEvent>(
      (cb) => onB.occupancy.subscribe(cb),
      (e) => e.occupancy.connections === 2 && e.occupancy.presenceMembers === 1,
    )
    const onA = await room(a, name, 'alice')
    await onA.presence.enter()
    await two
    expect(onB.occupancy.current).toEqual({ connections: 2, presenceMembers: 1 })
  })
})
