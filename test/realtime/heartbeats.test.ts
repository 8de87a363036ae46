/**
 * The server keeps its maxIdleInterval promise in both heartbeat modes: WebSocket pings (what
 * Node clients ask for, `heartbeats=false`) and HEARTBEAT frames (`heartbeats=true`, as browsers
 * ask), so an idle official client never decides the connection dropped. Idle means idle: these
 * tests wait several intervals (REALTIME_MAX_IDLE_INTERVAL_MS is 1 s here) and assert that
 * nothing happened; the bound is the client's own (maxIdleInterval + realtimeRequestTimeout).
 * What a busy machine may add on top is STALL_MS: a frame later than that is a stall, not load.
 */
import { describe, expect, test } from 'bun:test'
import { connectedClient, FORMATS, realtimeGateway } from '../helpers/realtime'
import { rawConnected } from '../helpers/realtime-raw'

const IDLE = 1000
const STALL_MS = 2000

const rt = realtimeGateway({ realtimeMaxIdleIntervalMs: IDLE })

const MODES = [
  ['pings (heartbeats=false)', {}],
  ['HEARTBEAT frames (heartbeats=true)', { transportParams: { heartbeats: 'true' } }],
] as const

test('idle official clients stay connected in both modes and both formats', async () => {
  // the client gives up after maxIdleInterval + realtimeRequestTimeout of silence: IDLE + STALL_MS here
  const clients = await Promise.all(
    FORMATS.flatMap(([format, binary]) =>
      MODES.map(async ([mode, opts]) => {
        const client = await connectedClient(
          rt.port,
          { key: rt.gw.key, realtimeRequestTimeout: STALL_MS, ...opts },
          binary,
        )
        const changes: string[] = []
        client.connection.on((c) => changes.push(`${c.current}: ${c.reason?.message}`))
        return { what: `${format}, ${mode}`, client, changes }
      }),
    ),
  )
  for (const { client } of clients)
    expect(
      (client.connection as unknown as { connectionManager: { connectionDetails: { maxIdleInterval: number } } })
        .connectionManager.connectionDetails.maxIdleInterval,
    ).toBe(IDLE)
  // long enough for a server that sends nothing to lose every client
  await Bun.sleep(IDLE + STALL_MS + 2 * IDLE)
  expect(clients.map((c) => [c.what, c.changes])).toEqual(clients.map((c) => [c.what, []]))
})

describe('on the wire (raw WebSocket)', () => {
  test('heartbeats=true: HEARTBEAT frames at least every maxIdleInterval while nothing else is sent', async () => {
    const { raw, connected } = await rawConnected(rt.base, { key: rt.gw.key, heartbeats: 'true' })
    expect(connected.connectionDetails.maxIdleInterval).toBe(IDLE)
    // the explicit bound of the protocol: never more than maxIdleInterval between frames. The server
    // sends one once IDLE / 2 passed without a frame (it looks every IDLE / 4): FRAMES of them take
    // FRAMES * IDLE * 3 / 4 at most. Gaps of more than IDLE + STALL_MS / FRAMES on average cross the
    // bound below (a busy machine may add STALL_MS in all); a server that stops sending fails the
    // wait for the next frame (IDLE + STALL_MS).
    const FRAMES = 8
    const start = Date.now()
    let from = raw.frames.length
    for (let i = 0; i < FRAMES; i++)
      from = raw.frames.indexOf(await raw.next((f) => f.action === 0, IDLE + STALL_MS, from)) + 1
    expect(Date.now() - start).toBeLessThanOrEqual(FRAMES * IDLE + STALL_MS)
    raw.close()
  })

  test('a client HEARTBEAT with an id is echoed with that id; without one it is not answered', async () => {
    const { raw } = await rawConnected(rt.base, { key: rt.gw.key })
    raw.send({ action: 0 })
    raw.send({ action: 0, id: 'ping-1' })
    const echo = await raw.next((f) => f.action === 0)
    expect(echo).toEqual({ action: 0, id: 'ping-1' })
    raw.close()
  })

  test('msgpack: the HEARTBEAT echo is a binary frame the client decodes', async () => {
    const { raw } = await rawConnected(rt.base, { key: rt.gw.key }, 'msgpack')
    raw.send({ action: 0, id: 'ping-2' })
    expect(await raw.next((f) => f.action === 0)).toEqual({ action: 0, id: 'ping-2' })
    expect(raw.garbage).toEqual([])
    raw.close()
  })
})
