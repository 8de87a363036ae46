import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import http2 from 'node:http2'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { GatewayNode } from '../helpers/node-process'
import { basic, ROOT_KEY } from '../helpers/gateway'
import { FLAG, FRAME, frame, headerBlock, indexedLiteral, rawH2, repeatNewest, rstStream } from '../helpers/h2-raw'
import { makeCert, opensslAvailable } from '../helpers/tls-cert'
import { STALL_MS, watchHealth } from '../hostile/fixture'

/**
 * HTTP/2 abuse against a gateway in its own process (so a stall shows in its own /health), on TLS
 * with a certificate made for the test: what Bun bounds (streams per connection, resets in a
 * flood, header blocks without end, HPACK expansion, control-frame floods from a client that does
 * not read) and what the gateway bounds the same way as on HTTP/1.1 (body size and deadline,
 * header size, idle connections, event streams whose client stops reading). Each attack runs
 * while /health is polled: no answer may take STALL_MS.
 */
const available = opensslAvailable()
const dir = mkdtempSync(join(tmpdir(), 'gw-h2-abuse-'))
let node: GatewayNode
const AUTH = basic(ROOT_KEY)

beforeAll(async () => {
  if (!available) return
  const { cert, key } = makeCert(dir)
  node = await GatewayNode.start(
    {
      TLS_CERT_FILE: cert,
      TLS_KEY_FILE: key,
      LOG_LEVEL: 'silent',
      IDLE_CONNECTION_TIMEOUT_MS: '5000', // whole seconds on a ~4 s tick: well above the body deadline
      REQUEST_BODY_TIMEOUT_MS: '1000',
      SSE_BUFFER_BYTES: '65536',
    },
    { scheme: 'https' },
  )
}, 30_000)
afterAll(async () => {
  await node?.stop()
  rmSync(dir, { recursive: true, force: true })
})

const port = () => Number(new URL(node.url).port)
const rssKiB = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${node.pid}/status`, 'utf8'))?.[1])

/** Runs `attack` while /health is polled; the slowest answer must stay under STALL_MS. */
async function underAttack<T>(attack: () => Promise<T>): Promise<T> {
  const health = watchHealth(node.url)
  try {
    return await attack()
  } finally {
    const { slowest, answers } = await health.stop()
    expect(answers).toBeGreaterThan(0)
    expect(slowest).toBeLessThan(STALL_MS)
  }
}

const settle = (c: { closed: Promise<void> }, ms = 5000) => Promise.race([c.closed, Bun.sleep(ms)])

describe.skipIf(!available)('HTTP/2 abuse', () => {
  test('streams past the advertised limit (256) are refused one by one; the connection goes on', async () => {
    const c = await rawH2(port())
    await underAttack(async () => {
      for (let i = 0; i < 600; i++)
        c.write(c.request(1 + 2 * i, `/sse?v=1.2&channels=many${i}`, [['authorization', AUTH]]))
      for (let i = 0; i < 200 && c.answered.size + c.resets.size < 600; i++) await Bun.sleep(25)
    })
    expect(c.answered.size).toBe(256)
    expect(c.resets.size).toBe(344)
    expect(c.isClosed()).toBe(false)
    c.socket.destroy()
  })

  test('a flood of requests each reset at once (rapid reset) is ended with GOAWAY ENHANCE_YOUR_CALM', async () => {
    const c = await rawH2(port())
    await underAttack(async () => {
      for (let i = 0; i < 100_000 && !c.isClosed(); i++) {
        c.write(
          Buffer.concat([
            c.request(1 + 2 * i, '/channels/x/messages', [['authorization', AUTH]]),
            rstStream(1 + 2 * i),
          ]),
        )
        if (i % 500 === 0) await Bun.sleep(0)
      }
      await settle(c)
    })
    // the server ends the connection; its GOAWAY says ENHANCE_YOUR_CALM when it reaches the client
    // (the frame can be lost to the TCP reset of a socket the server closed while this client was
    // still writing into it: seen once in a CI run, the connection closed and no frame read)
    expect(c.isClosed()).toBe(true)
    expect(c.goaway === undefined ? 'lost to the reset' : c.goaway).toBeOneOf([0xb, 'lost to the reset'])
  })

  test('a header block that never ends (CONTINUATION flood) is cut before it is buffered', async () => {
    const c = await rawH2(port())
    await underAttack(async () => {
      c.write(
        frame(
          FRAME.HEADERS,
          0,
          1,
          headerBlock([
            [':method', 'GET'],
            [':scheme', 'https'],
            [':path', '/health'],
            [':authority', 'x'],
          ]),
        ),
      )
      const chunk = headerBlock([['x-a', 'a'.repeat(16_000)]])
      for (let i = 0; i < 5000 && !c.isClosed(); i++) {
        c.write(frame(FRAME.CONTINUATION, 0, 1, chunk))
        if (i % 50 === 0) await Bun.sleep(0)
      }
      await settle(c)
    })
    expect(c.isClosed()).toBe(true)
    expect(c.goaway).toBeDefined()
  })

  test('HPACK expansion (14 KB of references decoding to 48 MB of headers) is refused', async () => {
    const c = await rawH2(port())
    const before = rssKiB()
    await underAttack(async () => {
      const block = Buffer.concat([
        headerBlock([
          [':method', 'GET'],
          [':scheme', 'https'],
          [':path', '/health'],
          [':authority', 'x'],
        ]),
        indexedLiteral('x-b', 'b'.repeat(4000)),
        repeatNewest(12_000),
      ])
      c.write(frame(FRAME.HEADERS, FLAG.END_HEADERS | FLAG.END_STREAM, 1, block))
      await settle(c)
    })
    expect(c.isClosed()).toBe(true)
    expect(c.answered.has(1)).toBe(false)
    expect(rssKiB() - before).toBeLessThan(32 * 1024)
  })

  test('PING and SETTINGS floods from a client that reads nothing: the connection is closed, memory stays bounded', async () => {
    for (const f of [frame(FRAME.PING, 0, 0, Buffer.alloc(8)), frame(FRAME.SETTINGS, 0, 0)]) {
      const c = await rawH2(port())
      c.socket.pause() // every answer (PING ACK, SETTINGS ACK) backs up in the server
      const before = rssKiB()
      const batch = Buffer.concat(Array(1000).fill(f))
      await underAttack(async () => {
        for (let i = 0; i < 2000 && !c.isClosed(); i++) {
          c.write(batch)
          await Bun.sleep(1)
        }
        await settle(c)
      })
      expect(c.isClosed()).toBe(true)
      expect(rssKiB() - before).toBeLessThan(64 * 1024)
    }
  })

  test('bodies: over MAX_BODY_SIZE (declared or not) 413 in the error shape, past the runtime limit a bare 413; a body that does not come in time 408', async () => {
    const s = http2.connect(node.url, { rejectUnauthorized: false })
    s.on('error', () => {})
    const post = (headers: http2.OutgoingHttpHeaders, body: Buffer | null) =>
      new Promise<{ status: number; code?: string; type?: string; ms: number }>((resolve, reject) => {
        const t = performance.now()
        const st = s.request({
          ':method': 'POST',
          ':path': '/channels/b/messages',
          authorization: AUTH,
          'content-type': 'application/json',
          ...headers,
        })
        let h: http2.IncomingHttpHeaders = {}
        st.on('response', (r) => (h = r))
        st.on('data', () => {})
        st.on('close', () =>
          resolve({
            status: Number(h[':status']),
            code: h['x-ably-errorcode'] as string | undefined,
            type: h['content-type'] as string | undefined,
            ms: performance.now() - t,
          }),
        )
        st.on('error', reject)
        if (body) st.end(body)
        else st.write('{"data":') // and nothing more
      })
    const big = Buffer.from(JSON.stringify({ data: 'x'.repeat(3_000_000) }))
    try {
      expect(await post({ 'content-length': String(big.length) }, big)).toMatchObject({
        status: 413,
        code: '40009',
        type: 'application/json',
      })
      expect(await post({}, big)).toMatchObject({ status: 413, code: '40009', type: 'application/json' })
      const slow = await post({ 'content-length': '100' }, null)
      expect(slow).toMatchObject({ status: 408, code: '40800' })
      expect(slow.ms).toBeGreaterThan(900)
      const huge = Buffer.alloc(5_000_000, 'x')
      expect((await post({ 'content-length': String(huge.length) }, huge)).status).toBe(413)
    } finally {
      s.close()
    }
  }, 30_000)

  test('a header block over 16 KiB gets 431', async () => {
    const s = http2.connect(node.url, { rejectUnauthorized: false })
    s.on('error', () => {})
    const status = await new Promise<number>((resolve) => {
      const st = s.request({ ':path': '/health', 'x-big': 'a'.repeat(20_000) })
      st.on('response', (h) => resolve(Number(h[':status'])))
      st.on('error', () => resolve(-1))
      st.end()
    })
    s.close()
    expect(status).toBe(431)
  })

  test('an idle h2 connection is closed (IDLE_CONNECTION_TIMEOUT_MS); one holding an event stream is not', async () => {
    const idle = await rawH2(port())
    const holding = await rawH2(port())
    holding.write(holding.request(1, '/sse?v=1.2&channels=held', [['authorization', AUTH]]))
    // whole seconds, checked on a ~4 s tick by the runtime: 5 s closes within ~9 s
    await settle(idle, 15_000)
    expect(idle.isClosed()).toBe(true)
    await Bun.sleep(6000) // past the setting and a whole check interval more
    expect(holding.isClosed()).toBe(false)
    expect(holding.answered.has(1)).toBe(true)
    holding.socket.destroy()
  }, 30_000)

  test('an event stream whose client leaves its h2 window closed is paused at SSE_BUFFER_BYTES, as on HTTP/1.1', async () => {
    const c = await rawH2(port()) // sends no WINDOW_UPDATE: 64 KiB and the stream's window is shut
    c.write(c.request(1, '/sse?v=1.2&channels=stuck', [['authorization', AUTH]]))
    const paused = async () => {
      const text = await (
        await fetch(`${node.url}/metrics`, { tls: { rejectUnauthorized: false } } as RequestInit)
      ).text()
      return Number(/^gateway_sse_slow_consumers_paused_total (\d+)/m.exec(text)?.[1] ?? 0)
    }
    for (let i = 0; i < 100 && !c.answered.has(1); i++) await Bun.sleep(20)
    const before = await paused()
    const body = JSON.stringify({ data: 'y'.repeat(30_000) })
    for (let i = 0; i < 40; i++) {
      const r = await fetch(`${node.url}/channels/stuck/messages`, {
        method: 'POST',
        headers: { authorization: AUTH, 'content-type': 'application/json' },
        body,
        tls: { rejectUnauthorized: false },
      } as RequestInit)
      expect(r.status).toBe(201)
    }
    expect(await paused()).toBeGreaterThan(before)
    c.socket.destroy()
  })
})
