import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { CONSOLE_ASSETS } from '../../src/api/console/assets'
import { createTestGateway, type TestGateway } from '../helpers/gateway'
import { expectError } from '../helpers/errors'

/** The web console's serving: its page and assets, their security headers, and CONSOLE=off. */
let on: TestGateway
let off: TestGateway

beforeAll(async () => {
  on = await createTestGateway()
  off = await createTestGateway({ webConsole: false })
})
afterAll(async () => {
  await on?.close()
  await off?.close()
})

/** The CSP directives of an answer, by name. */
const csp = (r: Response) =>
  Object.fromEntries(
    (r.headers.get('content-security-policy') ?? '')
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .map(([name, ...values]) => [name, values.join(' ')]),
  )

describe('CONSOLE=on (the default)', () => {
  test('GET /console is the page, with no credentials, its assets linked from this server only', async () => {
    const r = await on.request('/console', { key: null })
    expect(r.status).toBe(200)
    expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8')
    const page = await r.text()
    expect(page).toContain('<script type="module" src="/console/assets/main.js"></script>')
    // nothing from another origin, no inline script or style
    expect(page).not.toMatch(/(src|href)="(https?:)?\/\//)
    expect(page).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/)
    expect(page).not.toMatch(/<style|\sstyle=/)
  })

  test('the page and every asset may not be framed, run only its own scripts and talk only to this origin', async () => {
    for (const path of ['/console', ...Object.keys(CONSOLE_ASSETS).map((a) => `/console/assets/${a}`)]) {
      const r = await on.request(path, { key: null })
      expect(r.status).toBe(200)
      expect(r.headers.get('x-frame-options')).toBe('DENY')
      expect(r.headers.get('x-content-type-options')).toBe('nosniff')
      expect(r.headers.get('referrer-policy')).toBe('no-referrer')
      expect(csp(r)).toMatchObject({
        'default-src': "'none'",
        'script-src': "'self'",
        'style-src': "'self'",
        'connect-src': "'self'",
        'frame-ancestors': "'none'",
        'base-uri': "'none'",
        'form-action': "'none'",
        'require-trusted-types-for': "'script'",
      })
    }
  })

  test('assets have their content types; an unknown asset is 404 in the error shape', async () => {
    const js = await on.request('/console/assets/main.js', { key: null })
    expect(js.headers.get('content-type')).toBe('text/javascript; charset=utf-8')
    expect(await js.text()).toContain("from './api.js'")
    const css = await on.request('/console/assets/console.css', { key: null })
    expect(css.headers.get('content-type')).toBe('text/css; charset=utf-8')
    await expectError(await on.request('/console/assets/nothing.js', { key: null }), 404, 40400)
    await expectError(await on.request('/console/assets/..%2Fassets.ts', { key: null }), 404, 40400)
  })

  test('its requests are counted under the ops interface', async () => {
    await on.request('/console', { key: null })
    // counted once the response is sent, after `handle` resolves
    const counted = /gateway_http_requests_total\{interface="ops",route="\/console",status="200"\} [1-9]/
    let metrics = ''
    for (let i = 0; i < 100 && !counted.test(metrics); i++, await Bun.sleep(10))
      metrics = await (await on.request('/metrics', { key: null })).text()
    expect(metrics).toMatch(counted)
  })

  test('every module the page imports is served (no asset missing from the list)', async () => {
    const modules = new Set<string>()
    for (const name of Object.keys(CONSOLE_ASSETS).filter((a) => a.endsWith('.js'))) {
      const text = await (await on.request(`/console/assets/${name}`, { key: null })).text()
      for (const m of text.matchAll(/from '\.\/([\w-]+\.js)'/g)) modules.add(m[1]!)
    }
    expect(modules.size).toBeGreaterThan(3)
    for (const m of modules) expect(CONSOLE_ASSETS[m]).toBeDefined()
  })
})

describe('CONSOLE=off', () => {
  test('the page and its assets are unknown routes (404), the rest of the gateway is unchanged', async () => {
    await expectError(await off.request('/console', { key: null }), 404, 40400)
    await expectError(await off.request('/console/assets/main.js', { key: null }), 404, 40400)
    expect((await off.request('/health', { key: null })).status).toBe(200)
    expect((await off.request('/channels')).status).toBe(200)
  })

  test('the setting reads on and off', async () => {
    const { loadConfig } = await import('../../src/config')
    expect(loadConfig({}).webConsole).toBe(true)
    expect(loadConfig({ CONSOLE: 'off' }).webConsole).toBe(false)
    expect(() => loadConfig({ CONSOLE: 'maybe' })).toThrow(/CONSOLE/)
  })
})
