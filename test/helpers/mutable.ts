import { expect } from 'bun:test'
import { APP_ID, type TestGateway } from './gateway'

/** Makes `<id>:*` channels of the test app mutable (namespace rule `mutableMessages`). */
export async function mutableNamespace(gw: TestGateway, id = 'mut'): Promise<void> {
  await gw.backend.control.putNamespace({
    appId: APP_ID,
    id,
    persisted: false,
    pushEnabled: false,
    mutableMessages: true,
  })
}

let seq = 0
/** A channel of the `mut` namespace no other test uses. */
export const freshMutable = (what = 'ch') => `mut:${what}-${++seq}-${Math.random().toString(36).slice(2, 8)}`

/** `/channels/<ch>/messages<rest>`. */
export const messagesPath = (ch: string, rest = '') => `/channels/${encodeURIComponent(ch)}/messages${rest}`

/** Publishes one message over the channel REST interface; answers its serial. */
export async function publishOne(gw: TestGateway, ch: string, body: unknown, key?: string): Promise<string> {
  const r = await gw.request(messagesPath(ch), { method: 'POST', json: body, key })
  expect(r.status).toBe(201)
  return ((await r.json()) as { serials: string[] }).serials[0]!
}

/** `GET .../messages/<serial>`, which must answer 200. */
export async function getMessage(gw: TestGateway, ch: string, serial: string): Promise<Record<string, any>> {
  const r = await gw.request(messagesPath(ch, `/${serial}`))
  expect(r.status).toBe(200)
  return (await r.json()) as Record<string, any>
}
