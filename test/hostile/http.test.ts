import { afterAll, beforeAll, expect, test } from 'bun:test'
import { pack } from 'msgpackr'
import { ROOT_KEY, basic, createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { RawConnection, parseResponse, type RawResponse } from '../helpers/raw-http'

/**
 * The HTTP edge over real sockets: bodies that trickle in or declare too much, and requests the
 * runtime refuses before the gateway sees them. Every answer the gateway writes is in the spec's
 * error shape; the runtime's own answers are pinned here as measured (docs/security.md).
 */
let gw: TestGateway
let base: string
const BODY_TIMEOUT_MS = 300
beforeAll(async () => {
  gw = await createTestGateway({ requestBodyTimeoutMs: BODY_TIMEOUT_MS })
  base = listen(gw)
})
afterAll(async () => {
  await gw.close()
})

const AUTH = `Authorization: ${basic(ROOT_KEY)}\r\n`

function expectErrorShape(res: RawResponse | undefined, status: number, code: number) {
  expect(res?.status).toBe(status)
  expect(res!.headers['content-type']).toBe('application/json')
  expect(res!.headers['x-ably-errorcode']).toBe(String(code))
  expect(JSON.parse(res!.body).error).toMatchObject({ code, statusCode: status })
}

/** Sends `head`, then `body` one byte every 50 ms until the server answers or closes. */
async function trickle(head: string, body: string | Uint8Array) {
  const c = await RawConnection.open(base)
  c.write(head)
  const bytes = typeof body === 'string' ? new TextEncoder().encode(body) : body
  let i = 0
  const timer = setInterval(() => {
    if (i < bytes.length) c.write(bytes.subarray(i, ++i))
  }, 50)
  await c.until((t) => parseResponse(t) !== undefined, 10_000)
  clearInterval(timer)
  await c.until(() => false, 2000) // then the connection closes
  return { c, res: c.response(), sent: i, total: bytes.length }
}

test('a body trickling in is answered 408 / 40800 after REQUEST_BODY_TIMEOUT_MS and its connection closed', async () => {
  const json = '{"name":"slow","data":"' + 'x'.repeat(200) + '"}'
  const mp = new Uint8Array(pack({ name: 'slow', data: 'x'.repeat(200) }))
  const cases = [
    // the publish route, JSON and msgpack
    `POST /channels/slow/messages HTTP/1.1\r\nHost: gw.test\r\n${AUTH}Content-Type: application/json\r\nContent-Length: ${json.length}\r\n\r\n`,
    `POST /channels/slow/messages HTTP/1.1\r\nHost: gw.test\r\n${AUTH}Content-Type: application/x-msgpack\r\nContent-Length: ${mp.length}\r\n\r\n`,
  ]
  for (const [i, head] of cases.entries()) {
    const { c, res, sent, total } = await trickle(head, i === 0 ? json : mp)
    expectErrorShape(res, 408, 40800)
    expect(res!.headers.connection).toBe('close')
    expect(sent).toBeLessThan(total)
    expect(c.isClosed).toBe(true)
  }
  expect(
    await (await fetch(`${base}/channels/slow/messages`, { headers: { authorization: basic(ROOT_KEY) } })).json(),
  ).toEqual([])
})

test('a chunked body trickling in is answered 408 too', async () => {
  const c = await RawConnection.open(base)
  c.write(
    `POST /chat/rooms/slow/messages HTTP/1.1\r\nHost: gw.test\r\n${AUTH}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
  )
  const timer = setInterval(() => c.write('1\r\n \r\n'), 50)
  await c.until((t) => parseResponse(t) !== undefined, 10_000)
  clearInterval(timer)
  expectErrorShape(c.response(), 408, 40800)
  await c.until(() => false, 2000)
  expect(c.isClosed).toBe(true)
})

/** A comet connection opened by hand: the path of its requests (`/comet/<connectionKey>`). */
async function cometConnection(): Promise<string> {
  const r = await fetch(`${base}/comet/connect?v=6&key=${encodeURIComponent(ROOT_KEY)}`)
  const [connected] = (await r.json()) as Array<{ action: number; connectionDetails: { connectionKey: string } }>
  expect(connected!.action).toBe(4)
  return `/comet/${encodeURIComponent(connected!.connectionDetails.connectionKey)}`
}

test('a comet send body trickling in is cut at REQUEST_BODY_TIMEOUT_MS as REST bodies are: ERROR 40800, connection closed', async () => {
  const body = JSON.stringify([{ action: 0, id: 'x'.repeat(200) }])
  // a declared length, then a chunked body, each on a comet connection of its own
  for (const chunked of [false, true]) {
    const path = await cometConnection()
    const framing = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${body.length}`
    const head = `POST ${path}/send HTTP/1.1\r\nHost: gw.test\r\nContent-Type: application/json\r\n${framing}\r\n\r\n`
    const c = await RawConnection.open(base)
    c.write(head)
    let i = 0
    const timer = setInterval(() => {
      if (i < body.length) c.write(chunked ? `1\r\n${body[i++]}\r\n` : body[i++]!)
    }, 50)
    await c.until((t) => parseResponse(t) !== undefined, 10_000)
    clearInterval(timer)
    const res = c.response()
    expect(`${chunked ? 'chunked' : 'declared'}: ${res?.status}`).toBe(`${chunked ? 'chunked' : 'declared'}: 200`)
    expect(res!.headers.connection).toBe('close')
    const pms = JSON.parse(res!.body) as Array<{ action: number; error?: { code: number } }>
    expect(pms.at(-1)).toMatchObject({ action: 9, error: { code: 40800 } })
    expect(i).toBeLessThan(body.length)
    await c.until(() => false, 2000)
    expect(c.isClosed).toBe(true)
    // the connection failed: its key names nothing now
    const after = (await (await fetch(`${base}${path}/recv`)).json()) as Array<{ action: number }>
    expect(after[0]!.action).toBe(6)
  }
})

test('a declared length over MAX_BODY_SIZE is 413 / 40009 before the body is read, and the connection closes', async () => {
  for (const contentType of ['application/json', 'application/x-msgpack']) {
    const c = await RawConnection.open(base)
    c.write(
      `POST /channels/big/messages HTTP/1.1\r\nHost: gw.test\r\n${AUTH}Content-Type: ${contentType}\r\nContent-Length: ${gw.config.maxBodySize + 1}\r\n\r\n{`,
    )
    await c.until(() => false, 5000)
    expectErrorShape(c.response(), 413, 40009)
    expect(c.isClosed).toBe(true)
  }
})

test('methods without a route are 404 / 40400 in the error shape', async () => {
  for (const method of ['TRACE', 'PROPFIND', 'PURGE', 'SEARCH']) {
    const c = await RawConnection.open(base)
    c.write(`${method} /channels/x/messages HTTP/1.1\r\nHost: gw.test\r\nConnection: close\r\n\r\n`)
    await c.until(() => false, 5000)
    expectErrorShape(c.response(), 404, 40400)
  }
})

/** The runtime (Bun) answers these itself, before any handler runs: measured and documented. */
test('requests the runtime refuses get its bare answer, and the gateway keeps serving', async () => {
  const cases: Array<[string, string, number | undefined]> = [
    [
      'a header block over 16 KiB',
      `GET /health HTTP/1.1\r\nHost: gw.test\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
      431,
    ],
    ['a URL over 16 KiB', `GET /channels/${'a'.repeat(20_000)} HTTP/1.1\r\nHost: gw.test\r\n\r\n`, 431],
    ['a NUL in the path', `GET /health\0x HTTP/1.1\r\nHost: gw.test\r\n\r\n`, 505],
    ['no Host header', `GET /health HTTP/1.1\r\n\r\n`, 400],
    [
      'both Content-Length and Transfer-Encoding',
      `POST /health HTTP/1.1\r\nHost: gw.test\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n`,
      400,
    ],
    [
      'a body over twice MAX_BODY_SIZE (declared)',
      `POST /channels/x/messages HTTP/1.1\r\nHost: gw.test\r\nContent-Length: ${4 * gw.config.maxBodySize}\r\n\r\n`,
      413,
    ],
    ['an unknown method', `FROB /health HTTP/1.1\r\nHost: gw.test\r\n\r\n`, undefined],
  ]
  for (const [what, request, status] of cases) {
    const c = await RawConnection.open(base)
    c.write(request)
    await c.until(() => false, 5000)
    expect(`${what}: closed ${c.isClosed}`).toBe(`${what}: closed true`)
    const res = c.response()
    expect(`${what}: ${res?.status}`).toBe(`${what}: ${status}`)
    if (res) expect(res.body).toBe('') // no body of ours: the runtime wrote it
    expect((await fetch(`${base}/health`)).status).toBe(200)
  }
})
