import { afterAll, beforeAll, expect, test } from 'bun:test'
import { pack } from 'msgpackr'
import { ACCESS_TOKEN, APP_ID, createTestGateway, type TestGateway } from '../helpers/gateway'

/**
 * A refused body is never serialized: building an error from the value (as a validation library
 * does for its message) costs time in proportion to the value and its depth, which a hostile client
 * chooses. Every JSON.stringify call made while refusing these bodies is watched for the client's
 * marker.
 */
let gw: TestGateway
beforeAll(async () => {
  gw = await createTestGateway({ bootstrapAccountId: 'serialacct' })
})
afterAll(async () => {
  await gw.close()
})

const MARK = 'client-value-marker'
const wide = Array.from({ length: 2000 }, (_, i) => [MARK, i, { deeper: [MARK] }])
const bearer = { authorization: `Bearer ${ACCESS_TOKEN}` }

/** [path, method, body that fails its route's schema, extra headers]. */
const REFUSED: Array<[string, string, unknown, Record<string, string>]> = [
  ['/chat/rooms/r/messages', 'POST', { text: 'x', metadata: wide }, {}],
  ['/chat/rooms/r/typing', 'POST', { isTyping: wide }, {}],
  [`/keys/${APP_ID}.rootkey/requestToken`, 'POST', { ttl: wide }, {}],
  ['/messages', 'POST', { channels: wide, messages: {} }, {}],
  ['/liveobjects/ns/objects/o', 'PATCH', { data: 5, version: wide }, {}],
  ['/push/publish', 'POST', [wide], {}],
  ['/v1/accounts/serialacct/apps', 'POST', { name: wide }, bearer],
  [`/v1/apps/${APP_ID}/rules`, 'POST', { ruleType: wide }, bearer],
]

test('bodies refused by their schema are answered without serializing them (JSON and msgpack)', async () => {
  const requests = REFUSED.flatMap(([path, method, body, headers]) => [
    { path, method, headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(body) },
    {
      path,
      method,
      headers: { ...headers, 'content-type': 'application/x-msgpack' },
      body: new Uint8Array(pack(body)) as BodyInit,
    },
  ])
  const stringify = JSON.stringify
  const leaked: string[] = []
  JSON.stringify = function (this: unknown, ...args: Parameters<typeof stringify>) {
    const out = stringify.apply(JSON, args)
    if (typeof out === 'string' && out.includes(MARK)) leaked.push(out.slice(0, 120))
    return out
  } as typeof stringify
  const statuses: string[] = []
  try {
    for (const r of requests) {
      const res = await gw.request(r.path, { method: r.method, headers: r.headers, body: r.body })
      statuses.push(`${r.method} ${r.path} ${r.headers['content-type']}: ${res.status}`)
      await res.arrayBuffer()
    }
  } finally {
    JSON.stringify = stringify
  }
  for (const s of statuses) expect(s).toEndWith(': 400')
  expect(leaked).toEqual([])
})
