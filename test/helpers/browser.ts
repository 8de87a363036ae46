import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTestGateway, listen, type TestGateway } from './gateway'
import { requireSystem } from './system'

export const CHROMIUM = '/usr/bin/chromium'
/** Debian's chromium is there (else the browser tests skip, or fail under CI). */
export const chromiumAvailable = () => requireSystem(CHROMIUM, "Debian's chromium")

/** Debian's chromium, headless, with a fresh profile dir (playwright passes it as --user-data-dir); never a downloaded browser. */
export async function launchChromium(
  profile: string,
  { args = [], ...options }: { ignoreHTTPSErrors?: boolean; args?: string[] } = {},
) {
  const { chromium } = await import('playwright-core')
  return chromium.launchPersistentContext(profile, {
    ...options,
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      ...args,
    ],
  })
}

/** Polls `fn` (e.g. a page.evaluate) until `ok` holds for its value. */
export { waitFor } from './wait'

/** The official client's browser bundle, as the pages of `startBrowserPage` load it (`/ably.js`). */
const ABLY_BUNDLE = join(import.meta.dir, '..', '..', 'node_modules', 'ably', 'build', 'ably.js')

export interface BrowserPage {
  gw: TestGateway
  /** The page's address: another origin than the gateway's, as a customer's web app would be. */
  url: string
  browser: Awaited<ReturnType<typeof launchChromium>>
  /** Requests to anything off this machine, refused (a test expects none). */
  offMachine: string[]
  close(): Promise<void>
}

/**
 * A test gateway listening on a port, a page server on another origin serving `page(gatewayPort,
 * key)` with the official client's browser bundle at `/ably.js`, and Debian's chromium with a
 * fresh profile and no network: anything not on this machine is refused and remembered.
 */
export async function startBrowserPage(page: (gatewayPort: number, key: string) => string): Promise<BrowserPage> {
  const gw = await createTestGateway()
  const port = Number(new URL(listen(gw)).port)
  const pageServer = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: (req) =>
      new URL(req.url).pathname === '/ably.js'
        ? new Response(Bun.file(ABLY_BUNDLE), { headers: { 'content-type': 'text/javascript' } })
        : new Response(page(port, gw.key), { headers: { 'content-type': 'text/html' } }),
  })
  const profile = mkdtempSync(join(tmpdir(), 'chromium-profile-'))
  const offMachine: string[] = []
  const browser = await launchChromium(profile)
  await browser.route('**/*', (route) => {
    const host = new URL(route.request().url()).hostname
    if (host === '127.0.0.1' || host === 'localhost') return route.continue()
    offMachine.push(route.request().url())
    return route.abort()
  })
  return {
    gw,
    url: `http://127.0.0.1:${pageServer.port}/`,
    browser,
    offMachine,
    async close() {
      await browser.close()
      pageServer.stop(true)
      await gw.close()
      rmSync(profile, { recursive: true, force: true })
    },
  }
}
