/**
 * HTTP/3 (HTTP3=on, off by default) in Debian's chromium, against a gateway on TLS with a
 * certificate made for the test. Chromium takes QUIC to an origin it was told to (the gateway's
 * `Alt-Svc` header announces it; the flag spares the test the discovery round) and accepts the
 * test's certificate by its key. The page, on the gateway's own origin, publishes over REST and
 * holds twelve event streams that each receive every message, all over h3.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromiumAvailable, launchChromium, waitFor } from '../helpers/browser'
import { APP_ID, basic, createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { makeCert, OPENSSL, opensslAvailable } from '../helpers/tls-cert'

const available = chromiumAvailable() && opensslAvailable()
const dir = mkdtempSync(join(tmpdir(), 'gw-browser-h3-'))
const profile = mkdtempSync(join(tmpdir(), 'chromium-profile-'))
let gw: TestGateway
let base = ''
let browser: Awaited<ReturnType<typeof launchChromium>> | undefined

/** The base64 SHA-256 of a certificate's public key, as --ignore-certificate-errors-spki-list takes it. */
function spki(cert: string): string {
  const pub = execFileSync(OPENSSL, ['x509', '-in', cert, '-pubkey', '-noout'])
  const der = execFileSync(OPENSSL, ['pkey', '-pubin', '-outform', 'der'], { input: pub })
  return new Bun.CryptoHasher('sha256').update(der).digest('base64')
}

beforeAll(async () => {
  if (!available) return
  const { cert, key } = makeCert(dir)
  gw = await createTestGateway({ tlsCertFile: cert, tlsKeyFile: key, http3: true })
  base = listen(gw)
  browser = await launchChromium(profile, {
    ignoreHTTPSErrors: true,
    args: [
      '--enable-quic',
      `--origin-to-force-quic-on=127.0.0.1:${new URL(base).port}`,
      `--ignore-certificate-errors-spki-list=${spki(cert)}`,
    ],
  })
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await gw?.close()
  rmSync(dir, { recursive: true, force: true })
  rmSync(profile, { recursive: true, force: true })
})

test.skipIf(!available)(
  'over HTTP/3: REST and twelve event streams on one origin',
  async () => {
    const tab = await browser!.newPage()
    const protocols = new Set<string>()
    const cdp = await browser!.newCDPSession(tab)
    cdp.on('Network.responseReceived', (e) => {
      if (e.response.url.startsWith(base)) protocols.add(e.response.protocol!)
    })
    await cdp.send('Network.enable')
    // announced to clients that come over TCP
    const announced = await fetch(`${base}/health`, { tls: { rejectUnauthorized: false } } as RequestInit)
    expect(announced.headers.get('alt-svc')).toBe(`h3=":${new URL(base).port}"; ma=86400`)
    await tab.goto(`${base}/health`)
    await tab.evaluate(
      ([key]) => {
        const w = window as any
        w.received = Array.from({ length: 12 }, () => [])
        for (let i = 0; i < 12; i++) {
          const es = new EventSource(`/sse?v=1.2&channels=h3&key=${encodeURIComponent(key!)}`)
          es.addEventListener('message', (e) => w.received[i].push(JSON.parse(e.data).data))
        }
      },
      [gw.key],
    )
    await waitFor(
      async () => gw.core.hub.count(APP_ID, 'h3'),
      (n) => n === 12,
    )
    const status = await tab.evaluate(
      async ([auth]) =>
        (
          await fetch('/channels/h3/messages', {
            method: 'POST',
            headers: { authorization: auth!, 'content-type': 'application/json' },
            body: JSON.stringify({ data: 'over h3' }),
          })
        ).status,
      [basic(gw.key)],
    )
    expect(status).toBe(201)
    const got = await waitFor(
      () => tab.evaluate(() => (window as any).received as string[][]),
      (r) => r.every((l) => l.length === 1),
    )
    for (const l of got) expect(l).toEqual(['over h3'])
    expect([...protocols]).toEqual(['h3'])
    await tab.close()
  },
  60_000,
)
