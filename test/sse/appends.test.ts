/**
 * Event streams of a channel whose messages are appended to (AI Transport token streaming):
 * appends inside the stream's rollup window (the `appendRollupWindow` query param, 40 ms by
 * default) arrive as one append event of the joined data, a window of 0 sends each; a stream
 * opened while a message is being streamed gets the data so far as one update event first; a
 * resume (`lastEvent`) delivers the appends made meanwhile, each once.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { freshMutable as fresh, messagesPath, mutableNamespace, publishOne } from '../helpers/mutable'
import { messages, openSse, type SseClient, type SseEvent } from '../helpers/sse'

let gw: TestGateway
let base: string
const open: SseClient[] = []
beforeAll(async () => {
  gw = await createTestGateway({ sseKeepaliveMs: 200 })
  base = listen(gw)
  await mutableNamespace(gw)
})
afterAll(async () => {
  for (const c of open) c.close()
  await gw.close()
})

const sse = async (channel: string, qs = '') => {
  const c = await openSse(
    `${base}/sse?v=1.2&key=${encodeURIComponent(gw.key)}&channels=${encodeURIComponent(channel)}${qs}`,
  )
  open.push(c)
  expect(c.status).toBe(200)
  return c
}
const subscribed = async (channel: string, n = 1) => {
  for (let i = 0; i < 400 && gw.core.hub.count('testapp', channel) < n; i++) await Bun.sleep(5)
}
const append = (channel: string, serial: string, data: string) =>
  gw.request(messagesPath(channel, `/${serial}`), { method: 'PATCH', json: { action: 5, data } })

type Event = { action?: number; data: string; serial: string; version?: { serial: string } }
const parsed = (events: SseEvent[]) => messages(events).map((e) => JSON.parse(e.data) as Event)

/** The text a stream subscriber holds of message `serial` (creates and updates set it, appends add to it). */
function textOf(events: SseEvent[], serial: string) {
  let text = ''
  for (const m of parsed(events)) if (m.serial === serial) text = m.action === 5 ? text + m.data : m.data
  return text
}

const TOKENS = Array.from({ length: 40 }, (_, i) => ` t${i}`)

test('appends inside the window arrive joined; a window of 0 sends each; the text is exact', async () => {
  const name = fresh('sse-rollup')
  const joined = await sse(name)
  const each = await sse(name, '&appendRollupWindow=0')
  await subscribed(name, 2)
  const serial = await publishOne(gw, name, { name: 'response', data: 'Hello' })
  const started = performance.now()
  const rs = await Promise.all(TOKENS.map((t) => append(name, serial, t)))
  const ms = performance.now() - started
  expect(rs.map((r) => r.status)).toEqual(TOKENS.map(() => 200))
  const full = 'Hello' + TOKENS.join('')
  for (const c of [joined, each]) await c.until((e) => textOf(e, serial) === full)
  const appends = (c: SseClient) => parsed(c.events).filter((m) => m.action === 5).length
  expect(appends(each)).toBe(TOKENS.length)
  expect(appends(joined)).toBeLessThanOrEqual(2 + Math.ceil(ms / 40))
})

test('a stream opened mid-stream gets the data so far as one update; a resume gets the appends made meanwhile', async () => {
  const name = fresh('sse-late')
  const serial = await publishOne(gw, name, { name: 'response', data: 'Hello' })
  await append(name, serial, ',')
  const late = await sse(name)
  await subscribed(name)
  await append(name, serial, ' world')
  await late.until((e) => messages(e).length >= 1)
  const [first] = parsed(late.events)
  expect([first!.action, first!.data, first!.serial]).toEqual([1, 'Hello, world', serial])
  // resume after the update: the appends made since, as appends
  const lastEvent = messages(late.events).at(-1)!.id!
  late.close()
  await append(name, serial, '!')
  await append(name, serial, '?')
  const resumed = await sse(name, `&lastEvent=${encodeURIComponent(lastEvent)}&appendRollupWindow=0`)
  await resumed.until((e) => messages(e).length >= 2)
  expect(parsed(resumed.events).map((m) => [m.action, m.data])).toEqual([
    [5, '!'],
    [5, '?'],
  ])
})
