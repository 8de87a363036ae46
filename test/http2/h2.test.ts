import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import http2 from 'node:http2'
import { connect } from 'node:tls'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { APP_ID, basic, createTestGateway, listen, ROOT_KEY, type TestGateway } from '../helpers/gateway'
import { makeCert, opensslAvailable } from '../helpers/tls-cert'
import { requireSystem } from '../helpers/system'

/**
 * HTTP/2 on the TLS listener (HTTP2, on by default): a client offering `h2` by ALPN gets it, every
 * other one HTTP/1.1; REST and event streams over h2 (node:http2 and curl), many event streams on
 * one connection, WebSockets (HTTP/1.1 only) beside it on the same port; HTTP2=off serves 1.1 only.
 */
const available = opensslAvailable()
const dir = mkdtempSync(join(tmpdir(), 'gw-h2-'))
let gw: TestGateway
let off: TestGateway
let base = ''
let offBase = ''
const port = (b: string) => Number(new URL(b).port)

beforeAll(async () => {
  if (!available) return
  const { cert, key } = makeCert(dir)
  gw = await createTestGateway({ tlsCertFile: cert, tlsKeyFile: key })
  base = listen(gw)
  off = await createTestGateway({ tlsCertFile: cert, tlsKeyFile: key, http2: false })
  offBase = listen(off)
})
afterAll(async () => {
  await gw?.close()
  await off?.close()
  rmSync(dir, { recursive: true, force: true })
})

/** The protocol ALPN settles on when a client offers both. */
async function alpn(b: string): Promise<string | false | null> {
  const s = connect({ host: '127.0.0.1', port: port(b), ALPNProtocols: ['h2', 'http/1.1'], rejectUnauthorized: false })
  await new Promise((r) => s.once('secureConnect', r))
  const p = s.alpnProtocol
  s.destroy()
  return p
}

/** One request over an HTTP/2 session: status, headers and body. */
function h2request(s: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: string) {
  return new Promise<{ status: number; headers: http2.IncomingHttpHeaders; body: string }>((resolve, reject) => {
    const st = s.request(headers)
    let text = ''
    let h: http2.IncomingHttpHeaders = {}
    st.on('response', (r) => (h = r))
    st.on('data', (d) => (text += d))
    st.on('end', () => resolve({ status: Number(h[':status']), headers: h, body: text }))
    st.on('error', reject)
    st.end(body)
  })
}

const session = (b: string) => {
  const s = http2.connect(b, { rejectUnauthorized: false })
  s.on('error', () => {})
  return s
}

describe.skipIf(!available)('HTTP/2 on the TLS listener', () => {
  test('ALPN: h2 when offered (HTTP2 on by default), HTTP/1.1 with HTTP2=off; no HTTP/3 announced by default', async () => {
    expect(await alpn(base)).toBe('h2')
    const plain = await fetch(`${base}/health`, { tls: { rejectUnauthorized: false } } as RequestInit)
    expect(plain.headers.get('alt-svc')).toBeNull()
    // without h2 Bun selects no protocol by ALPN: the client speaks its default, HTTP/1.1
    expect(await alpn(offBase)).not.toBe('h2')
    const r = await fetch(`${offBase}/health`, { tls: { rejectUnauthorized: false } } as RequestInit)
    expect(r.status).toBe(200)
  })

  test('REST over h2: publish (JSON), history, errors in the spec shape', async () => {
    const s = session(base)
    try {
      const auth = basic(gw.key)
      const pub = await h2request(
        s,
        {
          ':method': 'POST',
          ':path': '/channels/h2rest/messages',
          authorization: auth,
          'content-type': 'application/json',
        },
        '{"name":"greeting","data":"over h2"}',
      )
      expect(pub.status).toBe(201)
      const hist = await h2request(s, { ':path': '/channels/h2rest/messages', authorization: auth })
      expect(hist.status).toBe(200)
      expect(JSON.parse(hist.body)[0]).toMatchObject({ name: 'greeting', data: 'over h2' })
      // a known key name with a wrong secret (an unknown key name is 40400, as the hosted service answers)
      const wrong = `${ROOT_KEY.slice(0, ROOT_KEY.indexOf(':'))}:wrong`
      const bad = await h2request(s, { ':path': '/channels/h2rest/messages', authorization: basic(wrong) })
      expect(bad.status).toBe(401)
      expect(bad.headers['content-type']).toBe('application/json')
      expect(bad.headers['x-ably-errorcode']).toBe('40101')
    } finally {
      s.close()
    }
  })

  test('24 event streams on one h2 connection each receive every message, in order', async () => {
    const s = session(base)
    const got: string[][] = Array.from({ length: 24 }, () => [])
    let answered = 0
    try {
      const streams = got.map((lines) => {
        const st = s.request({ ':path': `/sse?v=1.2&channels=h2many&key=${encodeURIComponent(gw.key)}` })
        st.on('response', () => answered++)
        let buf = ''
        st.on('data', (d) => {
          buf += d
          for (let k; (k = buf.indexOf('\n')) >= 0; buf = buf.slice(k + 1)) {
            const line = buf.slice(0, k)
            if (line.startsWith('data: ')) lines.push(JSON.parse(line.slice(6)).data)
          }
        })
        st.on('error', () => {})
        return st
      })
      // a stream delivers everything published after it is answered (its start fixed); a
      // subscriber the hub holds may still be reading its start from Redis
      await waitUntil(() => answered === 24)
      expect(gw.core.hub.count(APP_ID, 'h2many')).toBe(24)
      for (let i = 0; i < 20; i++)
        expect(
          (await gw.request('/channels/h2many/messages', { method: 'POST', json: { data: `m${i}` } })).status,
        ).toBe(201)
      await waitUntil(() => got.every((l) => l.length === 20))
      const want = Array.from({ length: 20 }, (_, i) => `m${i}`)
      for (const l of got) expect(l).toEqual(want)
      for (const st of streams) st.close()
    } finally {
      s.close()
    }
  })

  test.skipIf(!requireSystem('/usr/bin/curl', 'curl'))(
    'curl --http2: publish, history and an event stream',
    async () => {
      // (not spawnSync: the gateway answering curl runs in this process)
      const curl = async (args: string[]) => {
        const p = Bun.spawn(['curl', '-sk', '--http2', '--max-time', '5', '-w', '\n%{http_version}', ...args], {
          stdout: 'pipe',
        })
        const out = await new Response(p.stdout).text()
        const cut = out.lastIndexOf('\n')
        return { body: out.slice(0, cut), version: out.slice(cut + 1) }
      }
      const pub = await curl([
        '-u',
        gw.key,
        '-H',
        'content-type: application/json',
        '-d',
        '{"data":"from curl"}',
        `${base}/channels/h2curl/messages`,
      ])
      expect(pub.version).toBe('2')
      expect(JSON.parse(pub.body).channel).toBe('h2curl')
      const sse = await curl([
        '-N',
        '--max-time',
        '2',
        `${base}/sse?v=1.2&channels=h2curl&rewind=1&key=${encodeURIComponent(gw.key)}`,
      ])
      expect(sse.version).toBe('2')
      expect(sse.body).toContain('"data":"from curl"')
    },
  )

  test('WebSocket upgrades keep working beside h2 (HTTP/1.1 on the same port)', async () => {
    const url = `${base.replace('https', 'wss')}/?key=${encodeURIComponent(gw.key)}&format=json&v=2`
    const ws = new WebSocket(url, { tls: { rejectUnauthorized: false } } as unknown as string[])
    const first = await new Promise<any>((resolve, reject) => {
      ws.onmessage = (e) => resolve(JSON.parse(String(e.data)))
      ws.onerror = () => reject(new Error('websocket error'))
    })
    expect(first.action).toBe(4) // CONNECTED
    ws.close()
  })
})

async function waitUntil(ok: () => boolean | Promise<boolean>, timeoutMs = 10_000) {
  const end = Date.now() + timeoutMs
  while (!(await ok())) {
    if (Date.now() > end) throw new Error('condition not reached')
    await Bun.sleep(20)
  }
}
