import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { pack, unpack } from 'msgpackr'
import { basic, createTestGateway, listen, type TestGateway } from '../helpers/gateway'

/**
 * One publish path (issue 21): every publish to a listening server, whatever its format or
 * credentials, is served by Bun's native publish route, never by the Elysia app, and gets the
 * very answer the in-process route (app.handle) gives, errors included.
 */
let gw: TestGateway
let base: string
let elysiaCalls = 0
beforeAll(async () => {
  gw = await createTestGateway()
  // every request the native router does not take goes through app.fetch: count them
  const fetch = gw.app.fetch
  Object.defineProperty(gw.app, 'fetch', {
    value: (req: Request) => {
      elysiaCalls++
      return fetch(req)
    },
  })
  base = listen(gw)
})
afterAll(async () => {
  await gw.close()
})

const JSON_TYPE = 'application/json'
const MSGPACK = 'application/x-msgpack'
const FORM = 'application/x-www-form-urlencoded'

interface Case {
  name: string
  query?: string
  headers: Record<string, string>
  body?: BodyInit
}

const auth = () => ({ authorization: basic(gw.key) })
const send = (c: Case, channel: string, inProcess: boolean) => {
  const init = { method: 'POST', headers: c.headers, body: c.body }
  const path = `/channels/${channel}/messages${c.query ?? ''}`
  return inProcess ? gw.app.handle(new Request('http://localhost' + path, init)) : fetch(base + path, init)
}

/** Status, error code, content type and the decoded body without what differs per publish. */
async function answer(r: Response) {
  const type = r.headers.get('content-type')
  const bytes = new Uint8Array(await r.arrayBuffer())
  const text = new TextDecoder().decode(bytes)
  const body =
    type === MSGPACK
      ? unpack(bytes)
      : type === JSON_TYPE
        ? JSON.parse(text)
        : text.replace(/"messageId":"[^"]*"|"serials":\[[^\]]*\]/g, '')
  const strip = (b: any): any => {
    if (b && typeof b === 'object' && 'serials' in b)
      return { ...b, messageId: typeof b.messageId, serials: b.serials.length }
    if (b && typeof b === 'object' && 'response' in b) return { ...b, response: strip(b.response) }
    return b
  }
  return {
    status: r.status,
    code: r.headers.get('x-ably-errorcode'),
    message: r.headers.get('x-ably-errormessage'),
    type,
    body: strip(body),
  }
}

describe('every format on a real port', () => {
  test('JSON, msgpack, form, text/plain, chunked, query credentials and format parameters are all served by the native route', async () => {
    const token = (await (
      await gw.request('/keys/testapp.rootkey/requestToken', { method: 'POST', json: {} })
    ).json()) as { token: string }
    const json = (o: unknown) => JSON.stringify(o)
    const cases: Case[] = [
      { name: 'json', headers: { ...auth(), 'content-type': JSON_TYPE }, body: json({ name: 'json' }) },
      {
        name: 'msgpack',
        headers: { ...auth(), 'content-type': MSGPACK, accept: MSGPACK },
        body: new Uint8Array(pack([{ name: 'msgpack', data: new Uint8Array([1, 2, 3]) }])),
      },
      { name: 'form', headers: { ...auth(), 'content-type': FORM }, body: 'name=form&data=x' },
      { name: 'text/plain', headers: { ...auth(), 'content-type': 'text/plain' }, body: json({ name: 'text/plain' }) },
      {
        name: 'charset',
        headers: { ...auth(), 'content-type': 'application/json; charset=utf-8' },
        body: '{"name":"charset"}',
      },
      {
        name: 'chunked',
        headers: { ...auth(), 'content-type': JSON_TYPE },
        body: new ReadableStream({
          start(c) {
            c.enqueue(new TextEncoder().encode('{"name":'))
            c.enqueue(new TextEncoder().encode('"chunked"}'))
            c.close()
          },
        }),
      },
      {
        name: 'key query',
        query: `?key=${encodeURIComponent(gw.key)}`,
        headers: { 'content-type': JSON_TYPE },
        body: json({ name: 'key query' }),
      },
      {
        name: 'accessToken query',
        query: `?accessToken=${encodeURIComponent(token.token)}`,
        headers: { 'content-type': MSGPACK },
        body: new Uint8Array(pack({ name: 'accessToken query' })),
      },
      {
        name: 'format',
        query: '?format=msgpack',
        headers: { ...auth(), 'content-type': JSON_TYPE },
        body: '{"name":"format"}',
      },
      {
        name: 'envelope',
        query: '?envelope=json',
        headers: { ...auth(), 'content-type': MSGPACK },
        body: new Uint8Array(pack({ name: 'envelope' })),
      },
      { name: 'jsonp', query: '?callback=cb&rnd=1', headers: { ...auth(), 'content-type': FORM }, body: 'name=jsonp' },
    ]
    elysiaCalls = 0
    const answers = []
    for (const c of cases) answers.push([c.name, await answer(await send(c, 'formats', false))] as const)
    expect(elysiaCalls).toBe(0)
    for (const [name, a] of answers) {
      if (name === 'envelope') expect(a).toMatchObject({ status: 200, body: { statusCode: 201 } })
      else expect({ name, status: a.status }).toEqual({ name, status: 201 })
    }
    expect(answers.find(([n]) => n === 'msgpack')![1].type).toBe(MSGPACK)
    expect(answers.find(([n]) => n === 'format')![1].type).toBe(MSGPACK)
    expect(answers.find(([n]) => n === 'jsonp')![1].body).toStartWith('cb(')
    // and every one of them was stored, in order, binary data included
    const history = (await (await gw.request('/channels/formats/messages?direction=forwards')).json()) as any[]
    expect(history.map((m) => m.name)).toEqual(cases.map((c) => c.name))
    expect(history[1]).toMatchObject({ data: 'AQID', encoding: 'base64' })
  })
})

describe('the same errors whatever the format', () => {
  const typed = (type: string, value: unknown): Case => ({
    name: `${type} ${JSON.stringify(value)}`,
    headers: { ...auth(), 'content-type': type },
    body: type === MSGPACK ? new Uint8Array(pack(value)) : JSON.stringify(value),
  })
  const cases = (): Array<[Case, number, number]> => [
    // the message checks of the core, with their own codes, for msgpack as for JSON
    ...[JSON_TYPE, MSGPACK].flatMap((type): Array<[Case, number, number]> => [
      [typed(type, { name: 5 }), 400, 40001],
      [typed(type, { encoding: 5 }), 400, 40013],
      [typed(type, { clientId: 5 }), 400, 40012],
      [typed(type, { id: 5 }), 400, 40031],
      [typed(type, { extras: [] }), 400, 40001],
      [typed(type, { data: true }), 400, 40013],
      [typed(type, [5]), 400, 40001],
      [typed(type, []), 400, 40001],
      [typed(type, 'text'), 400, 40001],
      [typed(type, { data: 'x'.repeat(70_000) }), 413, 40009],
    ]),
    [
      { name: 'bad msgpack', headers: { ...auth(), 'content-type': MSGPACK }, body: new Uint8Array([0x92, 0xc1]) },
      400,
      40001,
    ],
    [{ name: 'bad json', headers: { ...auth(), 'content-type': JSON_TYPE }, body: '{bad' }, 400, 40001],
    [{ name: 'empty json', headers: { ...auth(), 'content-type': JSON_TYPE }, body: '' }, 400, 40001],
    [{ name: 'empty msgpack', headers: { ...auth(), 'content-type': MSGPACK }, body: new Uint8Array(0) }, 400, 40001],
    [{ name: 'empty form', headers: { ...auth(), 'content-type': FORM }, body: '' }, 400, 40001],
    [{ name: 'form clientId *', headers: { ...auth(), 'content-type': FORM }, body: 'clientId=*' }, 400, 40012],
    [{ name: 'csv', headers: { ...auth(), 'content-type': 'text/csv' }, body: 'a,b' }, 400, 40001],
    [
      { name: 'deep', headers: { ...auth(), 'content-type': MSGPACK }, body: new Uint8Array(100).fill(0x91) },
      400,
      40001,
    ],
    // credentials are checked before the body is read, in the header or the query
    [{ name: 'no credentials', headers: { 'content-type': MSGPACK }, body: new Uint8Array([0xc1]) }, 401, 40101],
    [
      {
        name: 'wrong key query',
        query: '?key=testapp.rootkey:wrong',
        headers: { 'content-type': FORM },
        body: 'name=x',
      },
      401,
      40101,
    ],
    [
      {
        name: 'key query, bad body',
        query: `?key=${encodeURIComponent(gw.key)}`,
        headers: { 'content-type': FORM },
        body: 'extras=x',
      },
      400,
      40001,
    ],
    [
      { name: 'accept msgpack', headers: { ...auth(), 'content-type': JSON_TYPE, accept: MSGPACK }, body: '{bad' },
      400,
      40001,
    ],
    [
      { name: 'format msgpack', query: '?format=msgpack', headers: { ...auth(), 'content-type': FORM }, body: 'id=' },
      400,
      40031,
    ],
    [
      {
        name: 'envelope',
        query: '?envelope=json',
        headers: { ...auth(), 'content-type': MSGPACK },
        body: new Uint8Array([0xc1]),
      },
      200,
      40001,
    ],
  ]

  test("msgpack, form and query-credential publishes get the core's errors, on the port and in-process alike", async () => {
    for (const [c, status, code] of cases()) {
      elysiaCalls = 0
      const served = await answer(await send(c, 'errors', false))
      expect({ name: c.name, elysiaCalls }).toEqual({ name: c.name, elysiaCalls: 0 })
      const inProcess = await answer(await send(c, 'errors', true))
      expect({ name: c.name, ...served }).toEqual({ name: c.name, ...inProcess })
      expect({ name: c.name, status: served.status, code: served.code }).toEqual({
        name: c.name,
        status,
        code: String(code),
      })
      // enveloped answers are 200 with the error inside
      const error = served.body.response?.error ?? served.body.error
      expect(error).toMatchObject({ code, statusCode: status === 200 ? 400 : status })
    }
    expect(await (await gw.request('/channels/errors/messages')).json()).toEqual([])
  })
})
