import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { APP_ID, createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { chromiumAvailable, launchChromium, waitFor } from '../helpers/browser'

const available = chromiumAvailable()

let gw: TestGateway
let base: string
let page: Awaited<ReturnType<typeof openPage>> | undefined
let pageServer: ReturnType<typeof Bun.serve> | undefined
const profile = mkdtempSync(join(tmpdir(), 'chromium-profile-'))

async function openPage(url: string) {
  const browser = await launchChromium(profile)
  const p = await browser.newPage()
  await p.goto(url)
  return { browser, page: p }
}

beforeAll(async () => {
  if (!available) return
  gw = await createTestGateway()
  base = listen(gw)
  // the page lives on another origin, as a customer's web app would
  pageServer = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    fetch: () =>
      new Response(
        `<!DOCTYPE html><html><body><script>
      window.received = []; window.opens = 0; window.errors = 0
      const es = new EventSource(${JSON.stringify(`${base}/sse?v=1.2&channels=browser&key=${encodeURIComponent(gw.key)}`)})
      es.onopen = () => { window.opens++ }
      es.onerror = () => { window.errors++ }
      es.addEventListener('message', (e) => { window.received.push({ id: e.lastEventId, data: JSON.parse(e.data).data }) })
    </script></body></html>`,
        { headers: { 'content-type': 'text/html' } },
      ),
  })
  page = await openPage(`http://127.0.0.1:${pageServer.port}/`)
}, 60_000)

afterAll(async () => {
  await page?.browser.close()
  pageServer?.stop(true)
  await gw?.close()
  rmSync(profile, { recursive: true, force: true })
})

const publish = async (data: string) => {
  const r = await gw.request('/channels/browser/messages', { method: 'POST', json: { data } })
  expect(r.status).toBe(201)
}
const received = async (): Promise<Array<{ id: string; data: string }>> =>
  page!.page.evaluate(() => (window as any).received)

test.skipIf(!available)(
  'EventSource receives published messages, reconnects by itself with Last-Event-ID and gets exactly what it missed',
  async () => {
    await waitFor(
      async () => gw.core.hub.count(APP_ID, 'browser'),
      (n) => n === 1,
    )
    for (let i = 0; i < 5; i++) await publish(`live-${i}`)
    await waitFor(received, (r) => r.length === 5)

    // the server drops every stream; the browser's own reconnect must resume after its last event id
    expect(gw.core.streams.disconnectAll()).toBe(1)
    await waitFor(
      async () => gw.core.hub.count(APP_ID, 'browser'),
      (n) => n === 0,
    )
    for (let i = 0; i < 3; i++) await publish(`missed-${i}`)
    await waitFor(
      async () => gw.core.hub.count(APP_ID, 'browser'),
      (n) => n === 1,
    )
    await publish('after')

    const all = await waitFor(received, (r) => r.length >= 9)
    await Bun.sleep(200)
    const final = await received()
    expect(final.map((m) => m.data)).toEqual([
      'live-0',
      'live-1',
      'live-2',
      'live-3',
      'live-4',
      'missed-0',
      'missed-1',
      'missed-2',
      'after',
    ])
    expect(new Set(final.map((m) => m.id)).size).toBe(final.length)
    expect(all.length).toBe(9)
    expect(await page!.page.evaluate(() => (window as any).opens)).toBe(2)
  },
  60_000,
)
