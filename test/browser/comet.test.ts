/**
 * The official client's browser bundle in Debian's chromium, told to use `xhr_polling` (the
 * transport browsers fall back to when a WebSocket cannot get through a proxy), from another
 * origin (CORS), with every request off this machine refused: it connects over comet, receives
 * what is published, and publishes.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chromiumAvailable, startBrowserPage, waitFor, type BrowserPage } from '../helpers/browser'
import { APP_ID, type TestGateway } from '../helpers/gateway'

const available = chromiumAvailable()

let rig: BrowserPage | undefined
let gw: TestGateway

const page = (gatewayPort: number, key: string) => `<!DOCTYPE html><html><body>
<script src="/ably.js"></script>
<script>
  const client = new Ably.Realtime({ key: ${JSON.stringify(key)}, endpoint: '127.0.0.1', port: ${gatewayPort},
    tls: false, transports: ['xhr_polling'], disconnectedRetryTimeout: 200, logLevel: 0 })
  const c = { states: [], received: [], id: null, transport: null }
  window.client = c
  client.connection.on((change) => {
    c.states.push(change.current)
    c.id = client.connection.id
    const t = client.connection.connectionManager.activeProtocol
    c.transport = t ? t.getTransport().shortName : null
  })
  const channel = client.channels.get('browser-comet')
  channel.subscribe((m) => c.received.push(m.data))
  c.publish = (data) => channel.publish('from-browser', data).then(() => 'ok', (e) => 'error ' + e.code)
</script></body></html>`

beforeAll(async () => {
  if (!available) return
  rig = await startBrowserPage(page)
  gw = rig.gw
}, 60_000)

afterAll(async () => {
  await rig?.close()
})

type Client = { states: string[]; received: unknown[]; id: string | null; transport: string | null }

test.skipIf(!available)(
  'the browser bundle connects over xhr_polling, receives what is published and publishes',
  async () => {
    const tab = await rig!.browser.newPage()
    await tab.goto(rig!.url)
    const client = () => tab.evaluate(() => (window as any).client as Client)
    let seen = await waitFor(client, (c) => c.states.includes('connected'))
    expect(seen.transport).toBe('xhr_polling')
    expect(gw.server!.realtime.connection(seen.id!)).toBeDefined()
    await waitFor(
      async () => gw.core.hub.count(APP_ID, 'browser-comet'),
      (n) => n === 1,
    )
    for (let i = 0; i < 3; i++) {
      const r = await gw.request('/channels/browser-comet/messages', { method: 'POST', json: { data: `rest-${i}` } })
      expect(r.status).toBe(201)
    }
    expect(await tab.evaluate(() => (window as any).client.publish('hello from chromium'))).toBe('ok')
    seen = await waitFor(client, (c) => c.received.length === 4)
    expect(seen.received).toEqual(['rest-0', 'rest-1', 'rest-2', 'hello from chromium'])
    expect(seen.states.filter((s) => s === 'connected').length).toBe(1)
    expect(rig!.offMachine).toEqual([])
    await tab.close()
  },
  60_000,
)
