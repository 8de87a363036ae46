import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Value } from '@sinclair/typebox/value'
import { unpack } from 'msgpackr'
import { ACCESS_TOKEN, createTestGateway, type TestGateway } from './helpers/gateway'

let gw: TestGateway
let doc: Doc
beforeAll(async () => {
  gw = await createTestGateway({ sandboxProvisioning: true })
  const r = await gw.request('/openapi/json', { key: null })
  expect(r.status).toBe(200)
  doc = (await r.json()) as Doc
})
afterAll(async () => {
  await gw.close()
})

interface Op {
  tags?: string[]
  security?: Array<Record<string, string[]>>
  requestBody?: { required?: boolean; content: Record<string, { schema: object }> }
  responses: Record<string, { description?: string; content?: Record<string, { schema: object }>; $ref?: string }>
}
interface Doc {
  openapi: string
  tags: Array<{ name: string }>
  paths: Record<string, Record<string, Op>>
  components: { securitySchemes: Record<string, { type: string; scheme?: string }> }
}

// the API browser and the web console are pages, not operations
const routes = () => gw.app.routes.filter((rt) => !rt.path.startsWith('/openapi') && !rt.path.startsWith('/console'))
const docPath = (p: string) => p.replace(/:(\w+)/g, '{$1}')

test('the served OpenAPI document lists every route of the app', () => {
  expect(doc.openapi).toStartWith('3.')
  const documented = new Set(
    Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`)),
  )
  const all = routes().map((rt) => `${rt.method} ${docPath(rt.path)}`)
  expect(all.length).toBeGreaterThan(90)
  expect(all.filter((rt) => !documented.has(rt))).toEqual([])
})

test('walking the document: every operation is tagged, secured, and has its request and response schemas', () => {
  const tags = new Set(doc.tags.map((t) => t.name))
  expect([...tags]).toEqual(
    expect.arrayContaining(['channels', 'event-stream', 'management', 'chat', 'liveobjects', 'push', 'ops']),
  )
  const schemes = doc.components.securitySchemes
  expect(schemes.basicAuth).toMatchObject({ type: 'http', scheme: 'basic' })
  expect(schemes.bearerToken).toMatchObject({ type: 'http', scheme: 'bearer' })
  expect(schemes.managementToken).toMatchObject({ type: 'http', scheme: 'bearer' })
  const problems: string[] = []
  for (const rt of routes()) {
    const name = `${rt.method} ${rt.path}`
    const op = doc.paths[docPath(rt.path)]?.[rt.method.toLowerCase()]
    if (!op) {
      problems.push(`${name}: missing`)
      continue
    }
    if (op.tags?.length !== 1 || !tags.has(op.tags[0]!)) problems.push(`${name}: tag ${op.tags}`)
    if (!Array.isArray(op.security)) problems.push(`${name}: no security`)
    for (const req of op.security ?? [])
      for (const s of Object.keys(req)) if (!schemes[s]) problems.push(`${name}: unknown scheme ${s}`)
    if (rt.path.startsWith('/v1') && JSON.stringify(op.security) !== '[{"managementToken":[]}]')
      problems.push(`${name}: management routes take the management token`)
    // a request body wherever the route reads one, in every format it parses
    if ((rt.hooks as { body?: unknown }).body) {
      const content = op.requestBody?.content ?? {}
      for (const type of ['application/json', 'application/x-msgpack', 'application/x-www-form-urlencoded'])
        if (!content[type]?.schema) problems.push(`${name}: no ${type} request schema`)
    } else if (op.requestBody) problems.push(`${name}: a request body it does not read`)
    // a success response with its schema (204 has none), and the shared error shape
    const success = Object.entries(op.responses).filter(([s]) => s.startsWith('2'))
    if (!success.length) problems.push(`${name}: no success response`)
    for (const [status, r] of success)
      if (status !== '204' && !Object.values(r.content ?? {})[0]?.schema)
        problems.push(`${name}: ${status} has no schema`)
    if (op.tags?.[0] !== 'ops' && op.responses['4XX']?.$ref !== '#/components/responses/Error')
      problems.push(`${name}: no error response`)
  }
  expect(problems).toEqual([])
})

test('response schemas describe what the routes really answer (JSON and msgpack)', async () => {
  const mgmt = { authorization: `Bearer ${ACCESS_TOKEN}` }
  const calls: Array<[string, string, unknown?, Record<string, string>?]> = [
    ['POST', '/channels/doc/messages', { name: 'n', data: 'd' }],
    ['GET', '/channels/doc/messages'],
    ['GET', '/channels/doc/presence'],
    ['GET', '/channels/doc'],
    ['GET', '/channels'],
    ['GET', '/channels?by=value'],
    ['POST', '/messages', { channels: ['a', 'b'], messages: { data: 'x' } }],
    ['GET', '/presence?channels=a,b'],
    ['GET', '/stats'],
    ['GET', '/time'],
    ['POST', '/keys/testapp.rootkey/requestToken', {}],
    ['GET', '/v1/me', undefined, mgmt],
    ['GET', '/v1/accounts', undefined, mgmt],
    ['GET', '/v1/apps/testapp/keys', undefined, mgmt],
    ['POST', '/v1/apps/testapp/namespaces', { id: 'docs', pushEnabled: true }, mgmt],
    ['GET', '/v1/apps/testapp/queues', undefined, mgmt],
    ['GET', '/v1/apps/testapp/stats', undefined, mgmt],
    ['POST', '/chat/rooms/doc/messages', { text: 'hi' }],
    ['GET', '/chat/rooms/doc/messages'],
    ['GET', '/chat/v4/rooms/doc/messages'],
    ['GET', '/chat/rooms/doc/occupancy'],
    ['POST', '/chat/rooms/doc/typing', { isTyping: true, clientId: 'c' }],
    ['PATCH', '/liveobjects/doc/objects/o', { data: { a: 1 } }],
    ['GET', '/liveobjects/doc/objects'],
    ['GET', '/liveobjects/doc/objects/o/history'],
    ['GET', '/liveobjects/doc/objects/o/subscriptions'],
    [
      'POST',
      '/push/deviceRegistrations',
      {
        id: 'd1',
        platform: 'browser',
        formFactor: 'desktop',
        push: { recipient: { transportType: 'ablyChannel', channel: 'docs:x' } },
      },
    ],
    ['POST', '/push/channelSubscriptions', { channel: 'docs:x', deviceId: 'd1' }],
    ['GET', '/push/channelSubscriptions'],
    ['GET', '/health'],
  ]
  const problems: string[] = []
  for (const [method, path, body, headers] of calls) {
    for (const accept of ['application/json', 'application/x-msgpack']) {
      const r = await gw.request(path, {
        method,
        json: body,
        headers: { ...headers, accept },
        ...(headers ? { key: null } : {}),
      })
      const route = gw.app.routes.find((rt) => rt.method === method && match(rt.path, path.split('?')[0]!))
      const schema = (route?.hooks as { response?: Record<number, object> }).response?.[r.status]
      if (!schema) {
        problems.push(`${method} ${path}: ${r.status} not declared`)
        continue
      }
      const value = accept.includes('msgpack') ? unpack(new Uint8Array(await r.arrayBuffer())) : await r.json()
      if (!Value.Check(schema as never, value))
        problems.push(`${method} ${path} (${accept}): ${[...Value.Errors(schema as never, value)][0]?.message}`)
      // writes are answered once (a second would conflict); /health speaks JSON only
      if (method !== 'GET' || path === '/health') break
    }
  }
  expect(problems).toEqual([])
})

const match = (template: string, path: string) => new RegExp(`^${template.replace(/:\w+/g, '[^/]+')}$`).test(path)

test('a browsable UI is served with its assets from this server', async () => {
  const r = await gw.request('/openapi', { key: null })
  expect(r.status).toBe(200)
  expect(r.headers.get('content-type')).toContain('text/html')
  const html = await r.text()
  const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!)
  expect(assets.sort()).toEqual([
    '/openapi/assets/favicon-32x32.png',
    '/openapi/assets/swagger-ui-bundle.js',
    '/openapi/assets/swagger-ui.css',
  ])
  for (const a of assets) {
    const asset = await gw.request(a, { key: null })
    expect(asset.status).toBe(200)
    expect((await asset.arrayBuffer()).byteLength).toBeGreaterThan(a.endsWith('.png') ? 500 : 10_000)
  }
  // the page names its icon, so a browser does not ask for /favicon.ico (a 404)
  expect(html).toContain('<link rel="icon" type="image/png" href="/openapi/assets/favicon-32x32.png" />')
  expect((await gw.request('/openapi/assets/favicon-32x32.png', { key: null })).headers.get('content-type')).toBe(
    'image/png',
  )
  expect((await gw.request('/openapi/assets/nothing.js', { key: null })).status).toBe(404)
})
