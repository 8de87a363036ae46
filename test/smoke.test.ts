import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestGateway, type TestGateway } from './helpers/gateway'

let gw: TestGateway
beforeAll(async () => {
  gw = await createTestGateway()
})
afterAll(async () => {
  await gw.close()
})

test('publish then read back', async () => {
  const r = await gw.request('/channels/smoke/messages', { method: 'POST', json: { name: 'n', data: 'd' } })
  expect(r.status).toBe(201)
  const h = await gw.request('/channels/smoke/messages')
  expect((await h.json())[0]).toMatchObject({ name: 'n', data: 'd' })
})
