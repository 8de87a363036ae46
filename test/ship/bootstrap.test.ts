import { afterAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SETTINGS } from '../../src/config'
import { GatewayNode } from '../helpers/node-process'

/**
 * BOOTSTRAP_* as the settings table describes them: a fresh data dir gets them (or random ones,
 * printed once); a used one gets those it lacks added at start (the README's order starts with
 * `npm start` and may set them later), and a key already there keeps its secret.
 */
const dataDir = mkdtempSync(join(tmpdir(), 'gw-bootstrap-'))
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

const status = (url: string, headers: Record<string, string>) => fetch(url, { headers }).then((r) => r.status)
const basic = (key: string) => ({ authorization: `Basic ${btoa(key)}` })
const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

async function withNode(env: Record<string, string>, fn: (n: GatewayNode) => Promise<void>) {
  const n = await GatewayNode.start({ DATA_DIR: dataDir, ...env })
  try {
    await fn(n)
  } finally {
    await n.kill('SIGTERM')
  }
}

test('BOOTSTRAP_KEY and BOOTSTRAP_ACCESS_TOKEN are added to a used data dir; an existing key keeps its secret', async () => {
  let printed = ''
  await withNode({ BOOTSTRAP_KEY: '', BOOTSTRAP_ACCESS_TOKEN: '' }, async (n) => {
    for (let i = 0; i < 100 && !n.log.includes('management access token:'); i++) await Bun.sleep(20)
    printed = n.log
  })
  const randomKey = / key: *(\S+)/.exec(printed)?.[1]
  expect(randomKey).toBeDefined()
  const appId = randomKey!.split('.')[0]!

  // the same data dir, now with fixed credentials: both are added, nothing is printed
  const key = `${appId}.fixed:the-secret-one`
  await withNode({ BOOTSTRAP_KEY: key, BOOTSTRAP_ACCESS_TOKEN: 'mgmt-token-two' }, async (n) => {
    expect(await status(`${n.url}/channels/x/messages`, basic(key))).toBe(200)
    expect(await status(`${n.url}/channels/x/messages`, basic(randomKey!))).toBe(200)
    expect(await status(`${n.url}/v1/me`, bearer('mgmt-token-two'))).toBe(200)
    expect(n.log).not.toContain('shown once')
  })

  // a key of that name is already there: the environment's other secret does not replace it
  await withNode({ BOOTSTRAP_KEY: `${appId}.fixed:another-secret`, BOOTSTRAP_ACCESS_TOKEN: '' }, async (n) => {
    expect(await status(`${n.url}/channels/x/messages`, basic(`${appId}.fixed:another-secret`))).toBe(401)
    expect(await status(`${n.url}/channels/x/messages`, basic(key))).toBe(200)
    expect(await status(`${n.url}/v1/me`, bearer('mgmt-token-two'))).toBe(200)
  })
}, 60_000)

test('the settings table says so (fresh store, and added to a used one)', () => {
  for (const name of ['BOOTSTRAP_KEY', 'BOOTSTRAP_ACCESS_TOKEN', 'BOOTSTRAP_ACCOUNT_ID']) {
    const s = Object.values(SETTINGS).find((x) => x.env === name)!
    expect(s.description).toMatch(/fresh/)
    expect(s.description).toMatch(/used|existing/)
  }
})
