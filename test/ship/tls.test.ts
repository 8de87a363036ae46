import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { basic, createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { makeCert, opensslAvailable } from '../helpers/tls-cert'

const available = opensslAvailable()
const dir = mkdtempSync(join(tmpdir(), 'gw-tls-'))
let gw: TestGateway | undefined
let base = ''

beforeAll(async () => {
  if (!available) return
  const { cert, key } = makeCert(dir)
  gw = await createTestGateway({ tlsCertFile: cert, tlsKeyFile: key, basicAuthRequiresTls: true })
  base = listen(gw)
})
afterAll(async () => {
  await gw?.close()
  rmSync(dir, { recursive: true, force: true })
})

test.skipIf(!available)('serves HTTPS with the given certificate; Basic auth is accepted over TLS', async () => {
  expect(base).toStartWith('https://')
  const tls = { rejectUnauthorized: false }
  const r = await fetch(`${base}/channels/secure/messages`, {
    method: 'POST',
    tls,
    headers: { authorization: basic(gw!.key), 'content-type': 'application/json' },
    body: '{"data":"over tls"}',
  } as RequestInit)
  expect(r.status).toBe(201)
  const h = await fetch(`${base}/channels/secure/messages`, {
    tls,
    headers: { authorization: basic(gw!.key) },
  } as RequestInit)
  expect(((await h.json()) as any[])[0].data).toBe('over tls')
  // the same gateway refuses Basic auth that did not arrive over TLS
  expect((await gw!.request('/channels/secure/messages')).status).toBe(401)
})

test('a certificate without its key is a configuration error', async () => {
  const { loadConfig } = await import('../../src/config')
  expect(() => loadConfig({ TLS_CERT_FILE: '/x.pem' })).toThrow(/TLS_KEY_FILE/)
})
