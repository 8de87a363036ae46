import { expect, test } from 'bun:test'
import { reach, realtimeClient, realtimeGateway } from '../helpers/realtime'

/**
 * Comet with a short idle interval (2 s): a long poll is answered when nothing comes (the client's
 * idle timer stays fed), an idle official client stays connected across many polls, and a
 * connection whose client stops polling is dropped (resumable).
 */
const rt = realtimeGateway({ realtimeMaxIdleIntervalMs: 2000 })

async function rawConnect() {
  const r = await fetch(`${rt.base}/comet/connect?v=6&key=${encodeURIComponent(rt.gw.key)}`)
  const [connected] = (await r.json()) as Array<{ connectionId: string; connectionDetails: { connectionKey: string } }>
  const key = connected!.connectionDetails.connectionKey
  return { id: connected!.connectionId, key, base: `${rt.base}/comet/${key}` }
}

test('a long poll with nothing to send is answered (empty, or a HEARTBEAT), never held past the idle interval', async () => {
  const { base } = await rawConnect()
  for (let i = 0; i < 2; i++) {
    const pms = (await (await fetch(`${base}/recv`)).json()) as Array<{ action: number }>
    expect(pms.every((pm) => pm.action === 0)).toBe(true)
  }
})

test('an idle official comet client stays connected across several polls', async () => {
  const c = realtimeClient(rt.port, { key: rt.gw.key, transports: ['comet'] }, false)
  await reach(c.connection, 'connected')
  const id = c.connection.id
  let changes = 0
  c.connection.on(() => changes++)
  // wait for three heartbeats the server sends on the poll (the client's idle timer stays fed)
  const server = rt.gw.server!.realtime.connection(id!)!
  const sentAt: number[] = []
  const send = server.send.bind(server)
  server.send = (pm: object) => {
    if ((pm as { action?: number }).action === 0) sentAt.push(Date.now())
    send(pm)
  }
  for (let i = 0; i < 600 && sentAt.length < 3; i++) await Bun.sleep(20)
  expect(sentAt.length).toBeGreaterThanOrEqual(3)
  expect(c.connection.state).toBe('connected')
  expect(c.connection.id).toBe(id)
  expect(changes).toBe(0)
})

test('a connection whose client stops polling is dropped from the node, and resumes', async () => {
  const { id, key } = await rawConnect()
  expect(rt.gw.server!.realtime.connection(id)).toBeDefined()
  for (let i = 0; i < 1000 && rt.gw.server!.realtime.connection(id); i++) await Bun.sleep(20)
  expect(rt.gw.server!.realtime.connection(id)).toBeUndefined()
  const r = await fetch(
    `${rt.base}/comet/connect?v=6&key=${encodeURIComponent(rt.gw.key)}&resume=${encodeURIComponent(key)}`,
  )
  const [connected] = (await r.json()) as Array<{ action: number; connectionId: string; error?: unknown }>
  expect(connected).toMatchObject({ action: 4, connectionId: id })
  expect(connected!.error).toBeUndefined()
})
