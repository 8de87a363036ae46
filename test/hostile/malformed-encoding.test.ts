import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestGateway } from '../helpers/gateway'
import type { GatewayNode } from '../helpers/node-process'
import { RawClient, realtimeUrl } from '../helpers/realtime-raw'
import { everyRoute, MALFORMED, walkMalformed, type WalkedRoute } from '../helpers/route-walk'
import { createLogger } from '../../src/lib/logger'
import { serve, type App } from '../../src/server'
import { hostileNode, ROOT_KEY, STALL_MS, watchHealth } from './fixture'

/**
 * Malformed percent-encoding in every path parameter and query of every route the gateway serves
 * (the list taken from the app: its Elysia routes, the comet routes and the realtime root), sent
 * to a gateway in a process of its own: each is a 4xx in the spec's error shape, never the
 * runtime's error page (a 500 with stack frames, source paths and lines, as `/comet/%E0%A4%A/recv`
 * got), with and without credentials; `/health` never stalls meanwhile.
 */
let node: GatewayNode
let routes: WalkedRoute[]
beforeAll(async () => {
  ;[node, routes] = await Promise.all([hostileNode(), everyRoute()])
}, 30_000)
afterAll(async () => {
  await node?.stop()
})

test('every route, every path parameter and query: a 4xx in the error shape, nothing of the server in it', async () => {
  expect(routes.length).toBeGreaterThan(100)
  for (const p of ['/comet/:connectionKey/recv', '/comet/:connectionKey/send', '/comet/connect', '/sse', '/console'])
    expect(routes.map((r) => r.path)).toContain(p)
  const health = watchHealth(node.url)
  const problems = await walkMalformed(node.url, routes)
  const { slowest } = await health.stop()
  expect(problems).toEqual([])
  expect(slowest).toBeLessThan(STALL_MS)
}, 120_000)

test('the comet routes name what is malformed (40003); a realtime WebSocket connect gets it as ERROR', async () => {
  const r = await fetch(`${node.url}/comet/${MALFORMED}/recv`)
  expect(r.status).toBe(400)
  expect(((await r.json()) as any).error).toMatchObject({
    code: 40003,
    message: expect.stringContaining('connectionKey'),
  })
  const c = await fetch(`${node.url}/comet/connect?v=6&key=${MALFORMED}`)
  expect(c.status).toBe(400)
  expect(((await c.json()) as any).error).toMatchObject({ code: 40003, message: expect.stringContaining('key') })
  // over a WebSocket a refusal is an ERROR frame after the upgrade (a client that cannot upgrade retries forever)
  const url = realtimeUrl(node.url, { v: '6', key: ROOT_KEY }) + `&clientId=${MALFORMED}`
  const ws = new RawClient(url)
  const frame = await ws.next(() => true)
  expect(frame).toMatchObject({ action: 9, error: { code: 40003, statusCode: 400 } })
  ws.close()
})

test('a request that throws outside every handler gets the spec 500, never the runtime error page', async () => {
  const gw = await createTestGateway()
  const throwing = {
    fetch: () => {
      throw new Error(`boom in ${import.meta.path}`)
    },
  } as unknown as App
  const server = serve(throwing, gw.core, gw.config, createLogger('silent'), { port: 0, hostname: '127.0.0.1' })
  try {
    const r = await fetch(`http://127.0.0.1:${server.port}/health`)
    const text = await r.text()
    expect(r.status).toBe(500)
    expect(r.headers.get('content-type')).toBe('application/json')
    expect(r.headers.get('x-ably-errorcode')).toBe('50000')
    expect(JSON.parse(text).error).toMatchObject({ code: 50000, statusCode: 500, message: 'Internal error' })
    expect(text).not.toContain(import.meta.path)
  } finally {
    server.realtime.close()
    await server.stop(true)
    await gw.close()
  }
})
