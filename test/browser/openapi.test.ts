import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { chromiumAvailable, launchChromium } from '../helpers/browser'

/** The API browser in Debian's chromium with every request outside the gateway blocked (no internet, no CDN). */
const available = chromiumAvailable()

let gw: TestGateway
let base: string
const profile = mkdtempSync(join(tmpdir(), 'chromium-profile-'))
let browser: Awaited<ReturnType<typeof launchChromium>> | undefined
const blocked: string[] = []

beforeAll(async () => {
  if (!available) return
  gw = await createTestGateway()
  base = listen(gw)
  browser = await launchChromium(profile)
  await browser.route('**/*', (route) => {
    if (route.request().url().startsWith(base)) return route.continue()
    blocked.push(route.request().url())
    return route.abort('internetdisconnected')
  })
}, 60_000)

afterAll(async () => {
  await browser?.close()
  await gw?.close()
  rmSync(profile, { recursive: true, force: true })
})

test.skipIf(!available)(
  '/openapi renders every operation offline, grouped by interface, and "try it" publishes',
  async () => {
    const page = await browser!.newPage()
    await page.goto(`${base}/openapi`)
    await page.waitForSelector('.opblock', { timeout: 20_000 })
    const tags = await page.$$eval('.opblock-tag', (els) => els.map((e) => e.getAttribute('data-tag')))
    expect(tags).toEqual(
      expect.arrayContaining(['channels', 'event-stream', 'management', 'chat', 'liveobjects', 'push', 'ops']),
    )
    expect(await page.locator('.opblock').count()).toBeGreaterThan(90)
    expect(await page.locator('.opblock-summary-path[data-path="/channels/{channel}/messages"]').count()).toBe(2)

    // "Authorize" with the API key, then try a publish from the page
    const [user, pass] = [gw.key.slice(0, gw.key.indexOf(':')), gw.key.slice(gw.key.indexOf(':') + 1)]
    await page.evaluate(([u, p]) => (window as any).ui.preauthorizeBasic('basicAuth', u, p), [user, pass])
    const publish = page.locator('#operations-channels-postChannelsByChannelMessages')
    await publish.locator('.opblock-summary').click()
    await publish.locator('.try-out__btn').click()
    await publish.locator('input[placeholder="channel"]').fill('from-the-browser')
    await publish.locator('.execute').click()
    await publish.locator('.live-responses-table tbody .response-col_status').first().waitFor()
    expect(
      (await publish.locator('.live-responses-table tbody .response-col_status').first().textContent())?.trim(),
    ).toBe('201')
    const history = await gw.request('/channels/from-the-browser/messages')
    expect(((await history.json()) as any[])[0]).toMatchObject({ name: 'greeting', data: 'hello' })
    expect(blocked).toEqual([])
  },
  60_000,
)

test.skipIf(!available)(
  '"Authorize" opens at the top of its dialog, the first field focused (not scrolled to the last scheme)',
  async () => {
    const page = await browser!.newPage()
    await page.goto(`${base}/openapi`)
    await page.waitForSelector('.opblock', { timeout: 20_000 })
    await page.locator('.auth-wrapper .authorize').click()
    await page.waitForSelector('.modal-ux-content input')
    // the dialog is taller than its box: there is something to scroll, and it is at the top
    const state = () =>
      page.evaluate(() => {
        const d = document.querySelector('.modal-ux-content') as HTMLElement
        return {
          overflow: d.scrollHeight > d.clientHeight,
          top: d.scrollTop,
          focusedFirst: document.activeElement === d.querySelector('input'),
        }
      })
    await Bun.sleep(300)
    expect(await state()).toEqual({ overflow: true, top: 0, focusedFirst: true })
    await page.close()
  },
  60_000,
)
