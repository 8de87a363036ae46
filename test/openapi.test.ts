import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestGateway, type TestGateway } from './helpers/gateway'

let gw: TestGateway
beforeAll(async () => { gw = await createTestGateway() })
afterAll(async () => { await gw.close() })

test('the served OpenAPI document lists every route of the app', async () => {
  const r = await gw.request('/openapi/json', { key: null })
  expect(r.status).toBe(200)
  const doc = (await r.json()) as { openapi: string; paths: Record<string, Record<string, unknown>> }
  expect(doc.openapi).toStartWith('3.')
  const documented = new Set(Object.entries(doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`)))
  const routes = gw.app.routes
    .filter((rt) => !rt.path.startsWith('/openapi'))
    .map((rt) => `${rt.method} ${rt.path.replace(/:(\w+)/g, '{$1}')}`)
  expect(routes.length).toBeGreaterThan(20)
  expect(routes.filter((rt) => !documented.has(rt))).toEqual([])
})

test('a browsable UI is served', async () => {
  const r = await gw.request('/openapi', { key: null })
  expect(r.status).toBe(200)
  expect(r.headers.get('content-type')).toContain('text/html')
})
