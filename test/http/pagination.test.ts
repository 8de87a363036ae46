import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { expectError } from '../helpers/errors'

let gw: TestGateway
let base: string
beforeAll(async () => {
  gw = await createTestGateway()
  base = listen(gw)
  for (let i = 0; i < 3; i++) await gw.request('/channels/pages/messages', { method: 'POST', json: { data: `m${i}` } })
})
afterAll(async () => {
  await gw.close()
})

const links = (r: Response) =>
  Object.fromEntries(
    [...(r.headers.get('link') ?? '').matchAll(/<\.\/(\w+)\?([^>]*)>; rel="(\w+)"/g)].map((m) => [
      m[3]!,
      { segment: m[1]!, params: Object.fromEntries(new URLSearchParams(m[2]!)) },
    ]),
  )

test('Link headers carry only the parameters that define the page', async () => {
  const junk = 'x'.repeat(16_384)
  const r = await gw.request(
    `/channels/pages/messages?limit=1&direction=forwards&junk=${junk}&rnd=7&format=json&key=${encodeURIComponent(gw.key)}`,
    { key: null },
  )
  expect(r.status).toBe(200)
  const l = links(r)
  expect(l.first).toEqual({ segment: 'messages', params: { limit: '1', direction: 'forwards' } })
  expect(l.current).toEqual(l.first)
  expect(l.next!.params).toMatchObject({ limit: '1', direction: 'forwards' })
  expect(Object.keys(l.next!.params).sort()).toEqual(['cursor', 'direction', 'limit'])
  expect(r.headers.get('link')!.length).toBeLessThan(400)

  // the next page keeps them and moves the cursor
  const page2 = await gw.request(`/channels/pages/messages?${new URLSearchParams(l.next!.params)}`)
  expect(((await page2.json()) as any[]).map((m) => m.data)).toEqual(['m1'])
  const l2 = links(page2)
  expect(l2.current!.params.cursor).toBe(l.next!.params.cursor)
})

test('a client on Node (undici fetch) reads the headers of a request with a 12 KB query', async () => {
  const url = `${base}/channels/pages/messages?limit=1&junk=${'y'.repeat(12_000)}`
  const script = `fetch(${JSON.stringify(url)}, { headers: { authorization: ${JSON.stringify(
    'Basic ' + Buffer.from(gw.key).toString('base64'),
  )} } }).then(r => console.log(r.status, (r.headers.get('link') ?? '').length, [...r.headers.keys()].join(';')), e => { console.log('error', e.cause?.code ?? e.message); process.exit(1) })`
  // a child process (the server runs in this one, so the call must not block it)
  const proc = Bun.spawn(['node', '-e', script], { stdout: 'pipe' })
  const out = (await new Response(proc.stdout).text()).trim().split(' ')
  expect(out[0]).toBe('200')
  expect(Number(out[1])).toBeLessThan(400)
})

test('page-defining parameters are bounded in length (400 / 40003, not a huge header)', async () => {
  const r = await gw.request(`/channels?prefix=${'p'.repeat(5000)}`)
  await expectError(r, 400, 40003)
  const ok = await gw.request(`/channels?prefix=pag&limit=5`)
  expect(links(ok).first!.params).toEqual({ prefix: 'pag', limit: '5' })
})

test('every paginated interface links with its own segment and its page parameters only', async () => {
  const cases: Array<[string, string, Record<string, string>]> = [
    // the default page size is written out when the query names none (a link needs a query)
    ['/channels/pages/presence?clientId=a&rnd=1', 'presence', { clientId: 'a', limit: '100' }],
    ['/channels/pages/presence/history?limit=2&rnd=1', 'history', { limit: '2' }],
    ['/stats?unit=hour&rnd=1', 'stats', { unit: 'hour', limit: '100' }],
    ['/push/deviceRegistrations?clientId=c&rnd=1', 'deviceRegistrations', { clientId: 'c', limit: '100' }],
    ['/push/channelSubscriptions?channel=ch&rnd=1', 'channelSubscriptions', { channel: 'ch', limit: '100' }],
    ['/channels/pages/messages', 'messages', { limit: '100' }],
    ['/chat/rooms?limit=3&rnd=1', 'rooms', { limit: '3' }],
    ['/liveobjects?limit=3&rnd=1', 'liveobjects', { limit: '3' }],
  ]
  for (const [path, segment, params] of cases) {
    const r = await gw.request(path)
    expect(r.status).toBe(200)
    expect(links(r).first).toEqual({ segment, params })
  }
})
