/**
 * Fault sessions on the realtime WebSocket (issue 45): every WebSocket match type and action of the
 * hosted tooling's grammar, with the official client (msgpack and JSON) connected through a
 * session's port, and the session's event log checked.
 */
import { describe, expect, test } from 'bun:test'
import { Action } from '../../src/core/connections'
import { frames, type FaultSession, useFaultSessions } from '../helpers/faults'
import { collect, connectedClient, FORMATS, fresh, reach, realtimeClient, realtimeGateway } from '../helpers/realtime'
import { waitFor } from '../helpers/wait'

const rt = realtimeGateway({ faults: true, faultsPort: 0, realtimeMaxIdleIntervalMs: 3000 })
const session = useFaultSessions(() => rt.gw.faultsUrl!)

const connects = (log: Awaited<ReturnType<FaultSession['log']>>) => log.filter((e) => e.type === 'ws_connect')

for (const [format, binary] of FORMATS) {
  describe(`fault sessions, official client over ${format}`, () => {
    test('passthrough: a publish and its delivery, every frame decoded in the log', async () => {
      const s = await session({
        rules: [
          { match: { type: 'ws_frame_to_server', action: 'ATTACH' }, action: { type: 'passthrough' }, comment: 'seen' },
        ],
      })
      const client = await connectedClient(s.port, { key: rt.gw.key }, binary)
      const ch = client.channels.get(fresh('pass'))
      const got = await collect(ch)
      await ch.publish('greeting', { hello: 'world' })
      expect((await got.until(1))[0]!.data).toEqual({ hello: 'world' })
      const log = await s.log()
      expect(connects(log)).toHaveLength(1)
      expect(connects(log)[0]!.queryParams!.format).toBe(binary ? 'msgpack' : 'json')
      expect(frames(log, 'server_to_client', Action.CONNECTED)[0]!.message.connectionId).toBe(client.connection.id!)
      const attach = frames(log, 'client_to_server', Action.ATTACH)
      expect(attach[0]!.ruleMatched).toBe('seen')
      expect(attach[0]!.message.channel).toBe(ch.name)
      const sent = frames(log, 'client_to_server', Action.MESSAGE)[0]!.message.messages[0]
      expect(sent.name).toBe('greeting')
      const delivered = frames(log, 'server_to_client', Action.MESSAGE)[0]!.message.messages[0]
      expect(delivered.name).toBe('greeting')
      expect(frames(log, 'server_to_client', Action.ACK)).toHaveLength(1)
    })

    test('ws_connect count + refuse_connection: the first connect is refused, the client retries', async () => {
      const s = await session({
        rules: [
          {
            match: { type: 'ws_connect', count: 1 },
            action: { type: 'refuse_connection' },
            times: 1,
            comment: 'refuse',
          },
        ],
      })
      const client = realtimeClient(s.port, { key: rt.gw.key }, binary)
      const states: string[] = []
      client.connection.on((c) => states.push(c.current))
      await reach(client.connection, 'connected', 15000)
      expect(states).toContain('disconnected')
      const log = await s.log()
      expect(connects(log).length).toBeGreaterThanOrEqual(2)
      expect(log.find((e) => e.type === 'ws_disconnect')).toMatchObject({ initiator: 'proxy', ruleMatched: 'refuse' })
    })

    test('ws_connect queryContains + accept_and_close: the resume is closed once, then resumes', async () => {
      const s = await session({
        rules: [
          {
            match: { type: 'ws_connect', queryContains: { resume: '*' } },
            action: { type: 'accept_and_close', closeCode: 4000 },
            times: 1,
          },
        ],
      })
      const client = await connectedClient(s.port, { key: rt.gw.key }, binary)
      const id = client.connection.id
      expect((await s.act({ type: 'disconnect' })).status).toBe(200)
      await reach(client.connection, 'disconnected')
      await reach(client.connection, 'connected', 15000)
      expect(client.connection.id).toBe(id!)
      const log = await s.log()
      const c = connects(log)
      expect(c.length).toBeGreaterThanOrEqual(3)
      expect(c[0]!.queryParams!.resume).toBeUndefined()
      expect(c[1]!.queryParams!.resume).toBeDefined()
      expect(log.find((e) => e.type === 'ws_disconnect' && e.closeCode === 4000)).toMatchObject({
        initiator: 'proxy',
        ruleMatched: 'rule-0',
      })
    })

    test('ws_frame_to_server ATTACH of one channel suppressed: that attach times out, the other attaches', async () => {
      const name = fresh('nope')
      const s = await session({
        rules: [
          {
            match: { type: 'ws_frame_to_server', action: 'ATTACH', channel: name },
            action: { type: 'suppress' },
            comment: 'drop attach',
          },
        ],
      })
      const client = await connectedClient(s.port, { key: rt.gw.key, realtimeRequestTimeout: 1500 }, binary)
      await client.channels.get(fresh('fine')).attach()
      const ch = client.channels.get(name)
      await expect(ch.attach()).rejects.toBeDefined()
      expect(ch.state).toBe('suspended')
      expect(client.connection.state).toBe('connected')
      const attach = frames(await s.log(), 'client_to_server', Action.ATTACH).filter((e) => e.message.channel === name)
      expect(attach.length).toBeGreaterThanOrEqual(1)
      for (const e of attach) expect(e.ruleMatched).toBe('drop attach')
    })

    test('ws_frame_to_client CONNECTED replaced by an ERROR: the connection fails with it', async () => {
      const s = await session({
        rules: [
          {
            match: { type: 'ws_frame_to_client', action: 'CONNECTED' },
            action: {
              type: 'replace',
              message: { action: 9, error: { code: 40005, statusCode: 400, message: 'Invalid key' } },
            },
            times: 1,
          },
        ],
      })
      const client = realtimeClient(s.port, { key: rt.gw.key }, binary)
      const reason = await reach(client.connection, 'failed', 8000, [])
      expect(reason?.code).toBe(40005)
      expect(client.connection.id).toBeUndefined()
    })

    test('ws_frame_to_client ACK (by number) suppressed, socket cut: the publish is resent on resume, stored once', async () => {
      const s = await session({
        rules: [
          { match: { type: 'ws_frame_to_client', action: '1', count: 1 }, action: { type: 'suppress' }, times: 1 },
        ],
      })
      const client = await connectedClient(s.port, { key: rt.gw.key }, binary)
      const ch = client.channels.get(fresh('resend'))
      await ch.attach()
      const published = ch.publish('once', 'x')
      await waitFor(s.log, (log) => frames(log, 'server_to_client', Action.ACK).some((e) => e.ruleMatched))
      expect((await s.act({ type: 'close' })).status).toBe(200)
      await published
      expect(frames(await s.log(), 'client_to_server', Action.MESSAGE).length).toBeGreaterThanOrEqual(2)
      const history = await rt.rest().channels.get(ch.name).history()
      expect(history.items.map((m) => m.name)).toEqual(['once'])
    })

    test('delay holds a frame and the frames behind it: delivery order is kept', async () => {
      const s = await session({
        rules: [
          {
            match: { type: 'ws_frame_to_client', action: 'MESSAGE' },
            action: { type: 'delay', delayMs: 400 },
            times: 1,
          },
        ],
      })
      const client = await connectedClient(s.port, { key: rt.gw.key }, binary)
      const ch = client.channels.get(fresh('delay'))
      const got = await collect(ch)
      const rest = rt.rest().channels.get(ch.name)
      for (let i = 0; i < 5; i++) await rest.publish('n', String(i))
      expect((await got.until(5)).map((m) => m.data)).toEqual(['0', '1', '2', '3', '4'])
      const log = await s.log()
      const delivered = frames(log, 'server_to_client', Action.MESSAGE)
      expect(delivered[0]!.ruleMatched).toBe('rule-0')
    })

    test('inject_to_client on a frame, and imperatively: an injected DETACHED makes the client re-attach', async () => {
      const name = fresh('inject')
      const s = await session({
        rules: [
          {
            match: { type: 'ws_frame_to_client', action: 'MESSAGE', channel: name },
            action: {
              type: 'inject_to_client',
              message: { action: 15, channel: name, messages: [{ name: 'injected', data: 'from the proxy' }] },
            },
            times: 1,
          },
        ],
      })
      const client = await connectedClient(s.port, { key: rt.gw.key }, binary)
      const ch = client.channels.get(name)
      const got = await collect(ch)
      await rt.rest().channels.get(name).publish('real', 'from the gateway')
      expect((await got.until(2)).map((m) => m.name)).toEqual(['injected', 'real'])
      expect(
        (
          await s.act({
            type: 'inject_to_client',
            message: { action: 13, channel: name, error: { code: 90198, statusCode: 500, message: 'detached' } },
          })
        ).status,
      ).toBe(200)
      await waitFor(s.log, (log) => frames(log, 'client_to_server', Action.ATTACH).length >= 2)
      await reach(ch, 'attached')
      const injected = frames(await s.log(), 'server_to_client').filter((e) => e.initiator === 'proxy')
      expect(injected.map((e) => e.message.action)).toEqual([15, 13])
    })

    test('delay_after_ws_connect + inject_to_client_and_close: DISCONNECTED injected, the client resumes', async () => {
      const s = await session({
        rules: [
          {
            match: { type: 'delay_after_ws_connect', delayMs: 300 },
            action: {
              type: 'inject_to_client_and_close',
              message: { action: 6, error: { code: 80003, statusCode: 500, message: 'go away' } },
            },
            times: 1,
            comment: 'kick',
          },
        ],
      })
      const client = await connectedClient(s.port, { key: rt.gw.key }, binary)
      const id = client.connection.id
      const reason = await reach(client.connection, 'disconnected')
      expect(reason?.code).toBe(80003)
      await reach(client.connection, 'connected', 15000)
      expect(client.connection.id).toBe(id!)
      const c = connects(await s.log())
      expect(c).toHaveLength(2)
      expect(c[1]!.queryParams!.resume).toBeDefined()
    })

    test('delay_after_ws_connect + disconnect (no close frame) and close with a code', async () => {
      const s = await session({
        rules: [
          {
            match: { type: 'delay_after_ws_connect', delayMs: 200, count: 1 },
            action: { type: 'disconnect' },
            comment: 'cut',
          },
          {
            match: { type: 'delay_after_ws_connect', delayMs: 200, count: 2 },
            action: { type: 'close', closeCode: 4321 },
            comment: 'close',
          },
        ],
      })
      const client = await connectedClient(s.port, { key: rt.gw.key }, binary)
      await waitFor(s.log, (log) => connects(log).length >= 3, 15000)
      await reach(client.connection, 'connected', 15000)
      const ends = (await s.log()).filter((e) => e.type === 'ws_disconnect' && e.initiator === 'proxy')
      expect(ends.slice(0, 2).map((e) => [e.ruleMatched, e.closeCode ?? null])).toEqual([
        ['cut', null],
        ['close', 4321],
      ])
    })

    test('suppress_onwards starves this socket of frames: the client gives up on it and reconnects', async () => {
      const s = await session({
        rules: [
          { match: { type: 'delay_after_ws_connect', delayMs: 300 }, action: { type: 'suppress_onwards' }, times: 1 },
        ],
      })
      const client = await connectedClient(s.port, { key: rt.gw.key, realtimeRequestTimeout: 1000 }, binary)
      await reach(client.connection, 'disconnected', 15000)
      await reach(client.connection, 'connected', 15000)
      const log = await s.log()
      expect(log.find((e) => e.type === 'action')?.message).toEqual({
        type: 'suppress_onwards',
        direction: 'server_to_client',
      })
      expect(connects(log).length).toBeGreaterThanOrEqual(2)
    })

    test('inject_to_client_and_close on a frame, and imperative close with a code', async () => {
      const s = await session({
        rules: [
          {
            match: { type: 'ws_frame_to_server', action: 'ATTACH' },
            action: {
              type: 'inject_to_client_and_close',
              message: { action: 6, error: { code: 80003, statusCode: 500, message: 'bye' } },
              closeCode: 4001,
            },
            times: 1,
          },
        ],
      })
      const client = await connectedClient(s.port, { key: rt.gw.key }, binary)
      const ch = client.channels.get(fresh('iac'))
      await ch.attach()
      expect((await s.act({ type: 'close', closeCode: 4002 })).status).toBe(200)
      await reach(client.connection, 'disconnected')
      await reach(client.connection, 'connected', 15000)
      const codes = (await s.log())
        .filter((e) => e.type === 'ws_disconnect' && e.initiator === 'proxy')
        .map((e) => e.closeCode)
      expect(codes).toEqual([4001, 4002])
    })
  })
}
