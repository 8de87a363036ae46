import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import type { PresenceMessage } from '../../src/core/types'
import { addKey, APP_ID, createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { chromiumAvailable, launchChromium } from '../helpers/browser'
import { connectedClient } from '../helpers/realtime'

/**
 * The web console in Debian's chromium, over a real port, every request outside the gateway
 * blocked: paste a key, see channels, watch one, see messages (published from the page and from
 * outside) and presence arrive live, read history, stats charts and health. Screenshots go to a
 * temp dir whose paths are printed (it is kept for inspection).
 */
const available = chromiumAvailable()

const profile = mkdtempSync(join(tmpdir(), 'chromium-profile-'))
const shots = mkdtempSync(join(tmpdir(), 'console-screenshots-'))
let browser: Awaited<ReturnType<typeof launchChromium>> | undefined
const gateways: TestGateway[] = []
/** Requests the browser tried outside the gateway. */
const blocked: string[] = []

async function gateway(overrides: Parameters<typeof createTestGateway>[0] = {}) {
  const gw = await createTestGateway(overrides)
  gateways.push(gw)
  return { gw, base: listen(gw) }
}

beforeAll(async () => {
  if (!available) return
  browser = await launchChromium(profile)
  await browser.route('**/*', (route) => {
    const url = route.request().url()
    if (gateways.some((gw) => gw.server && url.startsWith(`http://127.0.0.1:${gw.server.port}/`)))
      return route.continue()
    blocked.push(url)
    return route.abort('internetdisconnected')
  })
}, 60_000)

afterAll(async () => {
  await browser?.close()
  for (const gw of gateways) await gw.close()
  rmSync(profile, { recursive: true, force: true })
})

/** A new tab on the console, with the console errors (CSP violations among them) and page errors it reports. */
async function openConsole(base: string) {
  const page = await browser!.newPage()
  const problems: string[] = []
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`)
  })
  page.on('pageerror', (e) => problems.push(`page: ${e.message}`))
  await page.goto(`${base}/console`)
  return { page, problems }
}

async function connect(page: Page, key: string) {
  await page.fill('#key', key)
  await page.click('#key-form button[type=submit]')
  await page.waitForFunction(() => document.querySelector('#key-status')?.textContent !== 'checking…')
}

async function shot(page: Page, name: string) {
  const path = join(shots, `${name}.png`)
  await page.screenshot({ path, fullPage: true })
  console.log(`screenshot: ${path}`)
}

const text = (page: Page, selector: string) => page.locator(selector).innerText()
/** Waits until the text of `selector` satisfies `ok`; the last text is in the failure. */
async function textUntil(page: Page, selector: string, ok: (t: string) => boolean, ms = 15_000) {
  const until = Date.now() + ms
  let last = ''
  for (;;) {
    last = (await page.locator(selector).count()) ? await text(page, selector) : '(absent)'
    if (ok(last)) return last
    if (Date.now() > until) throw new Error(`${selector}: not as expected within ${ms} ms; last text: ${last}`)
    await Bun.sleep(50)
  }
}

const enter = (clientId: string, data: string): PresenceMessage => ({
  id: `conn1:0:0`,
  action: 2,
  clientId,
  connectionId: 'conn1',
  timestamp: 0,
  data,
})

test.skipIf(!available)(
  'paste a key, see channels, watch one: messages from the page and from outside and a presence member arrive live; history, stats and health',
  async () => {
    const { gw, base } = await gateway()
    const post = (channel: string, message: unknown) =>
      gw.request(`/channels/${channel}/messages`, { method: 'POST', json: message })
    expect((await post('lobby', { name: 'seed', data: 'before the console' })).status).toBe(201)

    // a realtime client of the node: the health panel counts it
    const client = await connectedClient(Number(new URL(base).port), { key: gw.key })
    const { page, problems } = await openConsole(base)
    // health needs no key
    await textUntil(page, '[data-health="ready"]', (t) => t === 'ready')
    expect(await text(page, '[data-health="realtime-connections"]')).toBe('1')
    expect(await text(page, '[data-health="sse-connections"]')).toMatch(/^\d+$/)
    client.close()
    expect(await text(page, '[data-health="live"]')).toBe('ok')
    expect(await text(page, '[data-health="backend"]')).toBe((await gw.core.health()).backend)
    expect(await text(page, '#health-badge')).toBe('ready')
    expect(await page.locator('#workspace').isHidden()).toBe(true)

    await connect(page, gw.key)
    expect(await text(page, '#key-status')).toBe('connected with key testapp.rootkey')
    await page.locator('#channels-table tr[data-channel="lobby"]').waitFor()
    await shot(page, '1-channels')

    // watch the channel: the page opens an event stream (with a token, not the key)
    await page.click('#channels-table tr[data-channel="lobby"] button')
    await textUntil(page, '#stream-status', (t) => t === 'live')
    expect(gw.core.hub.count(APP_ID, 'lobby')).toBe(1)
    // the channel list follows: one connection on the channel now
    await textUntil(page, '#channels-table tr[data-channel="lobby"] td:nth-child(2)', (t) => t === '1')

    // publish from the page; it arrives in the live view through the stream
    await page.fill('#publish-name', 'from-page')
    await page.fill('#publish-data', 'hello from the page')
    await page.click('#publish-form button[type=submit]')
    await textUntil(page, '#publish-status', (t) => t.startsWith('published'))
    await textUntil(page, '#live', (t) => t.includes('hello from the page'))

    // publish from outside the page (REST); markup in the data is shown as text, never parsed
    expect((await post('lobby', { name: 'from-rest', data: '<img src=x id=injected>hello from REST' })).status).toBe(
      201,
    )
    await textUntil(page, '#live', (t) => t.includes('<img src=x id=injected>hello from REST'))
    expect(await page.locator('#injected').count()).toBe(0)
    expect(
      await page.locator('#live li').evaluateAll((els) => els.map((e) => e.querySelector('.name')?.textContent)),
    ).toEqual(['from-rest', 'from-page'])

    // a presence member enters: listed, and the event shown
    await gw.core.presence.publish(APP_ID, 'lobby', [enter('alice', 'here')])
    await page.locator('#members li[data-client-id="alice"]').waitFor()
    expect(await text(page, '#member-count')).toBe('1')
    expect(await text(page, '#presence-events li')).toContain('enter')
    await shot(page, '2-live')

    // history: everything published, newest first
    await page.click('#history-load')
    await textUntil(page, '#history-status', (t) => t.startsWith('3 messages'))
    expect(await page.locator('#history li .name').evaluateAll((els) => els.map((e) => e.textContent))).toEqual([
      'from-rest',
      'from-page',
      'seed',
    ])

    // stats: three messages in, three out (two messages and the presence event to the page's stream)
    await page.click('#stats-refresh')
    await textUntil(page, '[data-stat="messages-in"]', (t) => t === '3')
    expect(await text(page, '[data-stat="messages-out"]')).toBe('3')
    expect(await text(page, '[data-stat="connections-peak"]')).toBe('1')
    const bars = page.locator('#chart-messages rect[data-series="in"]')
    expect(await bars.count()).toBe(60)
    const inValues = await bars.evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-value'))))
    expect(inValues.reduce((a, b) => a + b, 0)).toBe(3)
    const axis = await page.locator('#chart-messages svg text').evaluateAll((els) => els.map((e) => e.textContent))
    // the axis maximum is the tallest bar rounded up to 1, 2 or 5 (times a power of ten): 5 for the
    // three messages of one minute; 2 when the run crossed a minute boundary and split them
    const values = await page
      .locator('#chart-messages rect[data-series]')
      .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-value'))))
    const tallest = Math.max(...values)
    expect(tallest).toBeGreaterThanOrEqual(2)
    expect(axis).toContain(tallest === 3 ? '5' : '2')
    expect(await page.locator('#chart-connections rect[data-series="peak"]').count()).toBe(60)
    // the time axis names every 10th minute back from the newest (not only the two ends)
    const times = await page
      .locator('#chart-messages svg text.time')
      .evaluateAll((els) => els.map((e) => e.textContent!))
    expect(times).toHaveLength(6)
    const minutes = times.map((t) => Number(t.slice(0, 2)) * 60 + Number(t.slice(3)))
    for (let i = 1; i < minutes.length; i++) expect((minutes[i - 1]! - minutes[i]! + 1440) % 1440).toBe(10)
    await shot(page, '3-stats')

    expect(blocked).toEqual([])
    expect(problems).toEqual([])
    await page.close()
  },
  90_000,
)

test.skipIf(!available)(
  'a key without the stats capability: the stats panel says so; a wrong key is refused; "keep it in this tab" survives a reload',
  async () => {
    const { gw, base } = await gateway()
    const limited = await addKey(gw, 'nostats', {
      capability: { '*': ['subscribe', 'publish', 'presence', 'history', 'channel-metadata'] },
    })
    const { page, problems } = await openConsole(base)

    await connect(page, 'testapp.rootkey:not-the-secret')
    expect(await text(page, '#key-status')).toStartWith('not connected:')
    expect(await page.locator('#workspace').isHidden()).toBe(true)

    await page.check('#remember')
    await connect(page, limited)
    expect(await text(page, '#key-status')).toBe('connected with key testapp.nostats')
    await textUntil(page, '#stats-status', (t) => t.includes('cannot read stats'))
    expect(await text(page, '#stats-status')).toContain('"stats"')
    expect(await page.locator('#chart-messages svg').count()).toBe(0)
    await shot(page, '4-no-stats')

    // kept in this tab's sessionStorage only: a reload reconnects, "Forget" removes it
    await page.reload()
    await textUntil(page, '#key-status', (t) => t === 'connected with key testapp.nostats')
    await page.click('#forget')
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0)
    await page.reload()
    expect(await page.inputValue('#key')).toBe('')
    expect(blocked).toEqual([])
    // the refused key's and the stats' answers are the only errors (the browser logs every 4xx)
    expect(problems.filter((p) => !/status of 40[13] /.test(p))).toEqual([])
    await page.close()
  },
  60_000,
)

test.skipIf(!available)(
  'the live view outlives its token: when the stream token expires it gets a new one and resumes without loss or duplicates',
  async () => {
    const { gw, base } = await gateway({ tokenDefaultTtlMs: 1500 })
    const { page, problems } = await openConsole(base)
    await connect(page, gw.key)
    await page.fill('#channel-name', 'ticker')
    await page.click('#subscribe-form button[type=submit]')
    await textUntil(page, '#stream-status', (t) => t === 'live')
    // a message every 150 ms for 4.5 s: the stream's token expires (at least twice) meanwhile
    const sent: string[] = []
    for (let i = 0; i < 30; i++) {
      const data = `tick-${i}`
      const r = await gw.request('/channels/ticker/messages', { method: 'POST', json: { data } })
      expect(r.status).toBe(201)
      sent.push(data)
      await Bun.sleep(150)
    }
    await textUntil(page, '#live', (t) => t.includes('tick-29'))
    await Bun.sleep(300)
    const shown = await page.locator('#live li .data').evaluateAll((els) => els.map((e) => e.textContent))
    expect(shown.reverse()).toEqual(sent)
    // the stream was opened again with new tokens (one per 1.5 s of token life)
    const stats = (await (await gw.request('/stats?unit=minute&limit=2')).json()) as Array<{
      entries: Record<string, number>
    }>
    expect(stats.reduce((n, r) => n + (r.entries['connections.all.opened'] ?? 0), 0)).toBeGreaterThanOrEqual(3)
    expect(problems).toEqual([])
    await page.close()
  },
  60_000,
)
