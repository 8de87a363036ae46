/**
 * Refusals the Chat and Spaces SDKs can meet (capability denied, rate limit, oversized), on the
 * backend TEST_BACKEND names, msgpack and JSON. Chat awaits every call: each refusal reaches the
 * caller as an ErrorInfo it can catch. @ably/spaces leaves its cursor publishes (and the cursors
 * channel's presence enter) unawaited, so a NACK there would be an unhandled rejection, which
 * ends a Node process: on `<space>::$cursors` a refused realtime publish or presence operation is
 * acknowledged and dropped instead (nobody sees the cursor), and the client process goes on.
 * (An oversized cursor batch never reaches the server: ably-js refuses it itself, with the
 * connection's maxMessageSize, and Spaces leaves that rejection unhandled too.)
 */
import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import Spaces, { type CursorUpdate } from '@ably/spaces'
import { ChatClient } from '@ably/chat'
import { authCallbackOf, connectedClient, FORMATS, fresh, realtimeGateway } from '../helpers/realtime'
import { rawConnected } from '../helpers/realtime-raw'

const rt = realtimeGateway()
/** A gateway whose account may publish five messages (and presence operations) per second. */
const slow = realtimeGateway({ rateLimits: true, limitMessagesPerSecond: 5 })

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Unhandled rejections during a test (each would end a Node process by default). */
let unhandled: unknown[] = []
const record = (e: unknown) => void unhandled.push(e)
beforeEach(() => {
  unhandled = []
  process.on('unhandledRejection', record)
})
afterEach(() => {
  process.off('unhandledRejection', record)
})

describe.each(FORMATS)('refusals over %s', (_format, binary) => {
  /** A client of `fx` with a token of this capability (root key: everything). */
  const client = async (fx: typeof rt, clientId: string, capability?: Record<string, string[]>) => {
    if (!capability) return connectedClient(fx.port, { key: fx.gw.key, clientId }, binary)
    const { authCallback } = authCallbackOf(() =>
      fx.rest().auth.requestToken({ capability: JSON.stringify(capability), clientId }),
    )
    return connectedClient(fx.port, { authCallback }, binary)
  }

  /** Cursor positions `mover` sets until `watcher` has seen `n` updates of it, or `rounds` are done. */
  async function moveCursor(
    mover: Awaited<ReturnType<Spaces['get']>>,
    watcher: Awaited<ReturnType<Spaces['get']>>,
    clientId: string,
    data?: Record<string, unknown>,
    // until one arrives: ~9 s, a bound only a stall crosses (on a loaded cluster the SDK may see
    // the second member on the cursors channel, and start publishing, a second or two late)
    rounds = 150,
  ) {
    const seen: CursorUpdate[] = []
    watcher.cursors.subscribe('update', (u) => {
      if (u.clientId === clientId) seen.push(u)
    })
    for (let i = 0; i < rounds && !seen.length; i++) {
      await mover.cursors.set({ position: { x: i, y: i }, ...(data ? { data } : {}) })
      await sleep(60)
    }
    return seen
  }

  test('spaces: a member without publish moves its cursor; the batches are dropped, the process goes on', async () => {
    const name = fresh('nopub')
    const ada = await new Spaces(await client(rt, 'ada')).get(name)
    await ada.enter({ name: 'ada' })
    const eveClient = await client(rt, 'eve', { [name]: ['presence', 'subscribe', 'history'] })
    const eve = await new Spaces(eveClient).get(name)
    await eve.enter({ name: 'eve' })
    // ada's cursors reach eve (the SDK publishes once two members are on the cursors channel)
    expect((await moveCursor(ada, eve, 'ada')).length).toBeGreaterThan(0)
    // eve's are refused by her capability: acknowledged and dropped, nothing reaches ada
    expect(await moveCursor(eve, ada, 'eve', undefined, 10)).toEqual([])
    expect(unhandled).toEqual([])
    expect(eveClient.connection.state).toBe('connected')
  })

  test('spaces: cursor batches past the rate limit are dropped, the process goes on', async () => {
    const name = fresh('fast')
    const ada = await new Spaces(await client(slow, 'ada')).get(name)
    await ada.enter({ name: 'ada' })
    const bob = await new Spaces(await client(slow, 'bob')).get(name)
    await bob.enter({ name: 'bob' })
    // about sixteen batches a second against five messages a second: most are refused
    await moveCursor(bob, ada, 'bob', undefined, 20)
    await moveCursor(bob, ada, 'bob', undefined, 20)
    expect(unhandled).toEqual([])
    expect(bob.client.connection.state).toBe('connected')
  })

  test('chat: each refusal reaches the caller as an error it can catch', async () => {
    const name = fresh('chat-refused')
    const denied = new ChatClient(await client(rt, 'mallory', { [name]: ['subscribe'] }), {
      logLevel: 'silent' as never,
    })
    const room = await denied.rooms.get(name)
    await room.attach()
    await expect(room.typing.keystroke()).rejects.toMatchObject({ code: 40160 })
    await expect(room.reactions.send({ name: 'like' })).rejects.toMatchObject({ code: 40160 })
    await expect(room.messages.send({ text: 'no' })).rejects.toMatchObject({ code: 40160 })
    await expect(room.presence.enter()).rejects.toMatchObject({ code: 40160 })

    const ok = await new ChatClient(await client(rt, 'ok'), { logLevel: 'silent' as never }).rooms.get(name)
    await ok.attach()
    await expect(ok.messages.send({ text: 'x'.repeat(rt.gw.config.maxMessageSize + 10) })).rejects.toMatchObject({
      code: 40009,
    })

    const limited = await new ChatClient(await client(slow, 'fast'), { logLevel: 'silent' as never }).rooms.get(
      fresh('chat-limited'),
    )
    await limited.attach()
    const sends = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) => limited.messages.send({ text: `m${i}` })),
    )
    const refused = sends.filter((s) => s.status === 'rejected') as PromiseRejectedResult[]
    expect(refused.length).toBeGreaterThan(0)
    expect(refused[0]!.reason).toMatchObject({ code: 42910 })
    expect(unhandled).toEqual([])
  })
})

test('on `::$cursors` a presence operation is dropped whatever refused it (its mode, or the presence rules: no clientId here)', async () => {
  const { raw } = await rawConnected(rt.base, { key: rt.gw.key })
  const cursors = `${fresh('space')}::$cursors`
  // a key connection without a clientId, entering without one: refused by the presence rules (91000)
  raw.send({ action: 14, channel: cursors, msgSerial: 0, presence: [{ action: 2, data: { x: 1 } }] })
  raw.send({ action: 14, channel: fresh('plain'), msgSerial: 1, presence: [{ action: 2, data: { x: 1 } }] })
  const dropped = await raw.next((f) => f.action === 1 || f.action === 2)
  expect(dropped).toMatchObject({ action: 1, msgSerial: 0, res: [{ serials: [null] }] })
  // elsewhere the same refusal is a NACK
  const nack = await raw.next((f) => f.action === 2)
  expect(nack).toMatchObject({ msgSerial: 1, error: { code: 91000 } })
  expect((await rt.rest().channels.get(cursors).presence.history()).items).toEqual([])
})
