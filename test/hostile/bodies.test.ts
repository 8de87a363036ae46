import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { GatewayNode } from '../helpers/node-process'
import {
  ACCOUNT_ID,
  APP_ID,
  BEARER_AUTH,
  KEY_AUTH,
  MAX_BODY,
  ROOT_KEY,
  deepBodies,
  expectShape,
  hostileNode,
  packed,
  STALL_MS,
  watchHealth,
} from './fixture'

/**
 * Hostile bodies and parameters against every route family, sent to a gateway in a process of its
 * own while `/health` is polled: every answer is the right 4xx in the spec's error shape, and no
 * request stalls the gateway (no /health answer takes STALL_MS, 2 s: a stall, not a busy machine).
 */
let node: GatewayNode
beforeAll(async () => {
  node = await hostileNode()
}, 30_000)
afterAll(async () => {
  await node?.stop()
})

interface BodyRoute {
  family: string
  method: string
  path: string
  auth: Record<string, string>
  /** A body of the right format whose fields have the wrong types, and the code it gets. */
  wrong: unknown
  wrongCode: number
}

const KEY = KEY_AUTH
const BEARER = BEARER_AUTH
const route = (family: string, method: string, path: string, wrong: unknown, wrongCode: number, auth = KEY) =>
  ({ family, method, path, auth, wrong, wrongCode }) as BodyRoute
const BODY_ROUTES: BodyRoute[] = [
  route('channels (publish)', 'POST', '/channels/hostile/messages', { name: 5 }, 40001),
  route('channels', 'POST', '/channels/hostile/messages?via=route', { data: true }, 40013),
  route('batch', 'POST', '/messages', { channels: 5, messages: 'x' }, 40001),
  route('message change', 'PATCH', '/channels/hostile/messages/01000000000000-000000', { name: 5 }, 40001),
  route('tokens', 'POST', `/keys/${APP_ID}.rootkey/requestToken`, { ttl: [] }, 40001),
  route('management', 'POST', `/v1/accounts/${ACCOUNT_ID}/apps`, { name: 5 }, 40001, BEARER),
  route('management', 'POST', `/v1/apps/${APP_ID}/rules`, { ruleType: 5 }, 40001, BEARER),
  route('chat', 'POST', '/chat/rooms/hostile/messages', { text: 5 }, 40001),
  route('chat', 'POST', '/chat/rooms/hostile/typing', { isTyping: 'yes' }, 40001),
  route('liveobjects', 'PATCH', '/liveobjects/hostile/objects/o1', { data: 5 }, 40001),
  route('push', 'POST', '/push/deviceRegistrations', { id: 5 }, 40001),
  route('push', 'POST', '/push/publish', { recipient: 5 }, 40001),
]

const deep = deepBodies(100_000)
const oversized = new Uint8Array(MAX_BODY + 1).fill(0x20)
const json = { 'content-type': 'application/json' }
const msgpack = { 'content-type': 'application/x-msgpack' }

/** One hostile request: [what, init, status, codes]. */
type Attack = [string, RequestInit, number, number[]]

function attacks(r: BodyRoute): Attack[] {
  const h = (more: Record<string, string>) => ({ ...r.auth, ...more })
  const m = r.method
  return [
    ['malformed JSON', { method: m, headers: h(json), body: '{"name": "x",' }, 400, [40001]],
    ['malformed msgpack', { method: m, headers: h(msgpack), body: new Uint8Array([0x81, 0xc1]) }, 400, [40001]],
    ['JSON that is not an object', { method: m, headers: h(json), body: '"just a string"' }, 400, [40001]],
    ['fields of the wrong types', { method: m, headers: h(json), body: JSON.stringify(r.wrong) }, 400, [r.wrongCode]],
    [
      'msgpack fields of the wrong types',
      { method: m, headers: h(msgpack), body: packed(r.wrong) },
      400,
      [r.wrongCode],
    ],
    ['JSON nested 100,000 deep', { method: m, headers: h(json), body: deep.json }, 400, [40001]],
    ['msgpack nested 100,000 deep', { method: m, headers: h(msgpack), body: deep.msgpack }, 400, [40001]],
    ['a msgpack extension type', { method: m, headers: h(msgpack), body: packed({ at: new Date() }) }, 400, [40001]],
    [
      'an unsupported content type',
      { method: m, headers: h({ 'content-type': 'text/xml' }), body: '<x/>' },
      400,
      [40001],
    ],
    ['a body over MAX_BODY_SIZE', { method: m, headers: h(json), body: oversized }, 413, [40009]],
    [
      'a chunked body over MAX_BODY_SIZE',
      {
        method: m,
        headers: h(json),
        body: new ReadableStream({
          start(c) {
            for (let i = 0; i < 5; i++) c.enqueue(new Uint8Array(MAX_BODY / 4).fill(0x20))
            c.close()
          },
        }),
      },
      413,
      [40009],
    ],
  ]
}

/** Routes without bodies: query and path parameters of the wrong types or values. */
const PARAM_ATTACKS: Array<{ what: string; path: string; auth: Record<string, string>; status: number; code: number }> =
  [
    {
      what: 'history: limit not a number',
      path: '/channels/hostile/messages?limit=lots',
      auth: KEY,
      status: 400,
      code: 40003,
    },
    {
      what: 'history: start after end',
      path: '/channels/hostile/messages?start=10&end=5',
      auth: KEY,
      status: 400,
      code: 40003,
    },
    {
      what: 'presence: limit out of range',
      path: '/channels/hostile/presence?limit=-1',
      auth: KEY,
      status: 400,
      code: 40003,
    },
    { what: 'batch presence: no channels', path: '/presence', auth: KEY, status: 400, code: 40003 },
    { what: 'stats: unknown unit', path: '/stats?unit=fortnight', auth: KEY, status: 400, code: 40003 },
    {
      what: 'management stats: unknown unit',
      path: `/v1/apps/${APP_ID}/stats?unit=fortnight`,
      auth: BEARER,
      status: 400,
      code: 40003,
    },
    { what: 'channel: control character in the name', path: '/channels/a%00b', auth: KEY, status: 400, code: 40010 },
    {
      what: 'channel: name over 1,024 characters',
      path: `/channels/${'c'.repeat(2000)}`,
      auth: KEY,
      status: 400,
      code: 40010,
    },
    {
      what: 'chat: history limit too large',
      path: '/chat/rooms/hostile/messages?limit=100000',
      auth: KEY,
      status: 400,
      code: 40003,
    },
    {
      what: 'liveobjects: object id over 512 characters',
      path: `/liveobjects/hostile/objects/${'o'.repeat(600)}`,
      auth: KEY,
      status: 400,
      code: 40003,
    },
    {
      what: 'push: device list limit not a number',
      path: '/push/deviceRegistrations?limit=many',
      auth: KEY,
      status: 400,
      code: 40003,
    },
    { what: 'sse: no version', path: '/sse?channels=a', auth: KEY, status: 400, code: 40003 },
    {
      what: 'sse: rewind not a number',
      path: '/sse?v=1.2&channels=a&rewind=some',
      auth: KEY,
      status: 400,
      code: 40003,
    },
    {
      what: 'sse: too many channels',
      path: `/sse?v=1.2&channels=${Array.from({ length: 200 }, (_, i) => `c${i}`).join(',')}`,
      auth: KEY,
      status: 400,
      code: 40003,
    },
    {
      what: 'sse: a lastEvent of other channels',
      path: '/sse?v=1.2&channels=a&lastEvent=garbage',
      auth: KEY,
      status: 400,
      code: 40003,
    },
    { what: 'sse: a malformed key', path: `/sse?v=1.2&channels=a&key=no-colon`, auth: {}, status: 401, code: 40101 },
  ]

test('every hostile body and parameter gets its 4xx in the error shape, and /health never stalls', async () => {
  const health = watchHealth(node.url)
  let failure: unknown
  try {
    for (const r of BODY_ROUTES) {
      for (const [what, init, status, codes] of attacks(r))
        await expectShape(await fetch(node.url + r.path, init), status, codes, `${r.family} ${r.path}: ${what}`)
    }
    for (const a of PARAM_ATTACKS)
      await expectShape(await fetch(node.url + a.path, { headers: a.auth }), a.status, [a.code], a.what)
  } catch (e) {
    failure = e
  }
  const { slowest, answers } = await health.stop()
  if (failure) throw failure
  expect(answers).toBeGreaterThanOrEqual(5) // polled throughout
  expect(slowest).toBeLessThan(STALL_MS)
}, 60_000)

test('the gateway still serves ordinary requests afterwards', async () => {
  const r = await fetch(`${node.url}/channels/hostile/messages`, {
    method: 'POST',
    headers: { ...KEY_AUTH, ...json },
    body: JSON.stringify({ name: 'after', data: { nested: [1, [2, [3]]] } }),
  })
  expect(r.status).toBe(201)
  expect(ROOT_KEY).toContain(APP_ID)
})
