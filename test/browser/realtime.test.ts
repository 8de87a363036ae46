/**
 * The official client's browser bundle (`ably/build/ably.js`, served by the test) in Debian's
 * chromium, with every request off this machine refused: it connects over WebSocket (JSON, and
 * msgpack when asked), receives what is published, publishes, and resumes after its socket is cut.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chromiumAvailable, startBrowserPage, waitFor, type BrowserPage } from '../helpers/browser'
import { APP_ID, type TestGateway } from '../helpers/gateway'
import { cutSocket } from '../helpers/realtime'

const available = chromiumAvailable()

let rig: BrowserPage | undefined
let gw: TestGateway

/** The page: one client per format, each recording its state, its messages and its transport. */
const page = (gatewayPort: number, key: string) => `<!DOCTYPE html><html><body>
<script src="/ably.js"></script>
<script>
  window.clients = {}
  for (const [name, binary] of [['json', false], ['msgpack', true]]) {
    const client = new Ably.Realtime({ key: ${JSON.stringify(key)}, endpoint: '127.0.0.1', port: ${gatewayPort},
      tls: false, useBinaryProtocol: binary, disconnectedRetryTimeout: 200, logLevel: 0 })
    const c = { states: [], received: [], id: null, transport: null }
    window.clients[name] = c
    client.connection.on((change) => {
      c.states.push(change.current)
      c.id = client.connection.id
      const t = client.connection.connectionManager.activeProtocol
      c.transport = t ? t.getTransport().shortName : null
    })
    const channel = client.channels.get('browser-rt')
    channel.subscribe((m) => c.received.push(m.data))
    c.publish = (data) => channel.publish('from-browser', data).then(() => 'ok', (e) => 'error ' + e.code)
  }
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
  'the browser bundle connects over WebSocket in both formats, receives, publishes and resumes',
  async () => {
    const tab = await rig!.browser.newPage()
    await tab.goto(rig!.url)
    const clients = () => tab.evaluate(() => (window as any).clients as Record<'json' | 'msgpack', Client>)
    const publish = async (data: string) => {
      const r = await gw.request('/channels/browser-rt/messages', { method: 'POST', json: { data } })
      expect(r.status).toBe(201)
    }
    let seen = await waitFor(
      clients,
      (c) => c.json.states.includes('connected') && c.msgpack.states.includes('connected'),
    )
    for (const c of [seen.json, seen.msgpack]) expect(c.transport).toBe('web_socket')
    // browsers cannot see WebSocket pings: they ask for HEARTBEAT frames
    expect(gw.server!.realtime.connection(seen.json.id!)!.heartbeats).toBe(true)
    expect(gw.server!.realtime.connection(seen.msgpack.id!)!.format).toBe('msgpack')
    // subscribed once attached: wait until both channels count on the node
    await waitFor(
      async () => gw.core.hub.count(APP_ID, 'browser-rt'),
      (n) => n === 2,
    )

    for (let i = 0; i < 3; i++) await publish(`rest-${i}`)
    expect(await tab.evaluate(() => (window as any).clients.json.publish('hello from chromium'))).toBe('ok')
    const expected = ['rest-0', 'rest-1', 'rest-2', 'hello from chromium']
    seen = await waitFor(clients, (c) => c.json.received.length === 4 && c.msgpack.received.length === 4)
    expect(seen.json.received).toEqual(expected)
    expect(seen.msgpack.received).toEqual(expected)

    // its socket is cut: it resumes the same connection and misses nothing
    const id = seen.json.id!
    cutSocket(gw, id)
    await publish('while cut')
    seen = await waitFor(clients, (c) => c.json.received.length === 5)
    expect(seen.json.received.at(-1)).toBe('while cut')
    expect(seen.json.id).toBe(id)
    expect(seen.json.states.filter((s) => s === 'connected').length).toBe(2)
    expect(rig!.offMachine).toEqual([])
    await tab.close()
  },
  60_000,
)
