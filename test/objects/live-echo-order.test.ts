/**
 * A connection's own LiveObjects operations come back to it (the echo) before their ACK, on every
 * backend, as the hosted service does and as the official client's own suite expects
 * (ably-js `liveobjects.test.js`: "MAP_CLEAR removes parent references for object reference
 * entries" reads the state right after `sendState` resolves; "appliedOnAckSerials is cleared on
 * sync" holds back every OBJECT frame that arrives after the increment's ACK). On Redis the echo
 * comes through the node's channel subscription, apart from the script's reply: the ACK waits for
 * it.
 */
import { describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import { LiveCounter, LiveObjects } from 'ably/liveobjects'
import { connectedClient, FORMATS, fresh, realtimeGateway } from '../helpers/realtime'
import { eventually, MODES } from './live-util'

const rt = realtimeGateway()

const ACK = 1
const OBJECT = 19

/** Every frame the client receives, in order (its transport's protocol messages, as the suite intercepts them). */
function framesOf(c: Ably.Realtime): any[] {
  const transport = (c.connection as any).connectionManager.activeProtocol.getTransport()
  const original = transport.onProtocolMessage
  const frames: any[] = []
  transport.onProtocolMessage = function (m: any) {
    frames.push(m)
    return original.call(transport, m)
  }
  return frames
}

describe.each(FORMATS)('LiveObjects echo before ACK over %s', (_format, binary) => {
  const client = () =>
    connectedClient(rt.port, { key: rt.gw.key, plugins: { LiveObjects } } as Ably.ClientOptions, binary)
  const rootOf = async (c: Ably.Realtime, name: string) => {
    const ch = c.channels.get(name, { modes: MODES })
    return { ch: ch as any, root: await (ch as any).object.get() }
  }

  test('MAP_CLEAR sent with sendState: applied for the sender once it is acknowledged', async () => {
    const name = fresh('lo-echo-clear')
    const a = await rootOf(await client(), name)
    // set over REST, as the suite does: the sender learns of it from the channel alone
    const rest = rt.rest({ binary })
    const created = await rest.request('post', `/channels/${name}/object`, 3, null, [{ counterCreate: { count: 1 } }])
    const counterId = (created.items[0] as any).objectIds[0]
    await rest.request('post', `/channels/${name}/object`, 3, null, [
      { objectId: 'root', mapSet: { key: 'counter', value: { objectId: counterId } } },
    ])
    await eventually(() => expect(a.root.get('counter').value()).toBe(1))
    for (let i = 0; i < 5; i++) {
      await a.ch.sendState([{ operation: { action: 6, objectId: 'root', mapClear: {} } }])
      expect(a.root.compact()).toEqual({})
      await a.root.set('k', i)
    }
  })

  test("every ACK of the sender's operations comes after their echo", async () => {
    const name = fresh('lo-echo-ack')
    const c = await client()
    const frames = framesOf(c)
    const a = await rootOf(c, name)
    await a.root.set('counter', LiveCounter.create(10))
    for (let i = 0; i < 10; i++) await a.root.get('counter').increment(5)
    await Promise.all(Array.from({ length: 10 }, (_, i) => a.root.set(`k${i}`, i)))
    expect(a.root.get('counter').value()).toBe(60)
    const echoed = new Set<string>()
    let acked = 0
    for (const f of frames) {
      if (f.action === OBJECT) for (const m of f.state ?? []) echoed.add(m.serial)
      if (f.action !== ACK) continue
      for (const r of f.res ?? [])
        for (const serial of r.serials ?? []) {
          expect(echoed.has(serial)).toBe(true)
          acked++
        }
    }
    expect(acked).toBe(2 + 10 + 10)
  })
})
