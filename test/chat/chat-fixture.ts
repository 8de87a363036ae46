import { expect } from 'bun:test'
import type { Capability } from '../../src/core/types'
import { addKey, APP_ID, type TestGateway } from '../helpers/gateway'

/** Shared helpers of the chat suites (they run on both backends). */

export const room = (name: string) => `/chat/rooms/${encodeURIComponent(name)}`
export const v4room = (name: string) => `/chat/v4/rooms/${encodeURIComponent(name)}`
export const roomChannel = (name: string) => `${name}::$chat`

/** Headers identifying the caller as `clientId` (X-Ably-ClientId, base64 as the clients send it). */
export const as = (clientId: string): Record<string, string> => ({
  'x-ably-clientid': Buffer.from(clientId).toString('base64'),
})

/** Creates a key of the test app with `capability`; returns the key string. */
export const keyWith = (gw: TestGateway, id: string, capability: Capability): Promise<string> =>
  addKey(gw, id, { capability })

export async function json(r: Response, status = 200): Promise<any> {
  const text = await r.text()
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${text}`)
  return text ? JSON.parse(text) : undefined
}

export { expectError } from '../helpers/errors'

export async function send(
  gw: TestGateway,
  name: string,
  body: unknown,
  init: { headers?: Record<string, string>; key?: string } = {},
) {
  return json(await gw.request(`${room(name)}/messages`, { method: 'POST', json: body, ...init }), 201)
}

/** Waits until this node's hub has `n` subscribers on `channel`. */
export async function subscribed(gw: TestGateway, channel: string, n = 1) {
  for (let i = 0; i < 400 && gw.core.hub.count(APP_ID, channel) !== n; i++) await Bun.sleep(5)
  expect(gw.core.hub.count(APP_ID, channel)).toBe(n)
}

/** Every page of a paginated GET, following the `next` Link header. */
export async function allPages(gw: TestGateway, path: string): Promise<{ items: any[]; pages: number }> {
  const items: any[] = []
  let url: string | undefined = path
  let pages = 0
  const base = path.slice(0, path.lastIndexOf('/') + 1)
  while (url) {
    const r = await gw.request(url)
    items.push(...(await json(r)))
    pages++
    const next = /<\.\/([^>]+)>; rel="next"/.exec(r.headers.get('link') ?? '')
    url = next ? base + next[1] : undefined
  }
  return { items, pages }
}
