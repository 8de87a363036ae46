/**
 * The annotation storm (issue 40): a message whose summary is at the annotation cap (1,000 entries
 * of long names and clientIds), 20 realtime subscribers, 200 annotation toggles. The gateway runs
 * in its own process on the run's backend: `/health` must keep answering (under 1 s), every
 * summary a subscriber gets stays within ANNOTATION_SUMMARY_MAX_BYTES (client lists clipped, totals
 * exact), summaries of a message go out at most once per ANNOTATION_SUMMARY_INTERVAL_MS, and every
 * subscriber ends on the message's current summary. Prints the figures docs/security.md quotes.
 */
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { GatewayNode } from '../helpers/node-process'
import { realtimeUrl } from '../helpers/realtime-raw'
import { APP_ID, BEARER_AUTH, KEY_AUTH, ROOT_KEY, hostileNode, watchHealth } from './fixture'

const SUMMARY_BYTES = 65536
const INTERVAL_MS = 100
const SUBSCRIBERS = 20
const TOGGLES = 200
const FIELDS = 1000
/** A summary MESSAGE frame is the summary plus its envelope (channel, ids, serial, timestamp). */
const ENVELOPE = 1024

let node: GatewayNode
beforeAll(async () => {
  node = await hostileNode({
    ANNOTATION_SUMMARY_MAX_BYTES: String(SUMMARY_BYTES),
    ANNOTATION_SUMMARY_INTERVAL_MS: String(INTERVAL_MS),
  })
  const r = await fetch(`${node.url}/v1/apps/${APP_ID}/namespaces`, {
    method: 'POST',
    headers: { ...BEARER_AUTH, 'content-type': 'application/json' },
    body: JSON.stringify({ id: 'storm', mutableMessages: true }),
  })
  expect(r.status).toBeLessThan(300)
})
afterAll(() => node?.stop())

const post = (path: string, body: unknown) =>
  fetch(`${node.url}${path}`, {
    method: 'POST',
    headers: { ...KEY_AUTH, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })

/** A realtime subscriber (JSON frames) that counts what it receives and keeps only its last summary. */
async function subscriber(channel: string) {
  const ws = new WebSocket(realtimeUrl(node.url, { key: ROOT_KEY, format: 'json', heartbeats: 'false' }))
  const s = { bytes: 0, summaries: 0, largest: 0, last: undefined as unknown, attached: false, ws }
  ws.onmessage = (ev) => {
    const text = String(ev.data)
    s.bytes += Buffer.byteLength(text)
    const pm = JSON.parse(text)
    if (pm.action === 4) ws.send(JSON.stringify({ action: 10, channel }))
    if (pm.action === 11) s.attached = true
    if (pm.action === 15 && pm.messages?.[0]?.action === 4) {
      s.summaries++
      s.largest = Math.max(s.largest, Buffer.byteLength(text))
      s.last = pm.messages[pm.messages.length - 1].annotations.summary
    }
  }
  for (let i = 0; i < 500 && !s.attached; i++) await Bun.sleep(10)
  expect(s.attached).toBe(true)
  return s
}

test('annotation storm: 200 toggles of a message at the cap, 20 subscribers', async () => {
  const channel = `storm:${Math.random().toString(36).slice(2)}`
  const path = `/channels/${encodeURIComponent(channel)}/messages`
  const published = await post(path, { name: 'm', data: 'annotate me' })
  expect(published.status).toBe(201)
  const serial = ((await published.json()) as { serials: string[] }).serials[0]!
  const annotations = `${path}/${encodeURIComponent(serial)}/annotations`
  // the summary at the cap: FIELDS distinct.v1 entries, each a long name of its own and a long clientId
  const long = (what: string, i: number) => `${what}-${i}-`.padEnd(250, 'x')
  const entry = (i: number, action = 0) => ({
    action,
    type: 'storm:distinct.v1',
    name: long('name', i),
    clientId: long('client', i),
  })
  for (let from = 0; from < FIELDS; from += 100) {
    const r = await post(
      annotations,
      Array.from({ length: 100 }, (_, i) => entry(from + i)),
    )
    expect(r.status).toBe(201)
  }

  const subs = await Promise.all(Array.from({ length: SUBSCRIBERS }, () => subscriber(channel)))
  const health = watchHealth(node.url)
  const started = performance.now()
  for (let i = 0; i < TOGGLES; i++) {
    const r = await post(annotations, entry(FIELDS - 1, i % 2 === 0 ? 1 : 0))
    expect(r.status).toBe(201)
  }
  // every subscriber ends on the message's current summary (as read back)
  const current = async () =>
    ((await (await fetch(`${node.url}${path}/${encodeURIComponent(serial)}`, { headers: KEY_AUTH })).json()) as any)
      .annotations.summary
  const expected = await current()
  for (let i = 0; i < 1000 && subs.some((s) => JSON.stringify(s.last) !== JSON.stringify(expected)); i++)
    await Bun.sleep(10)
  const elapsed = performance.now() - started
  const { slowest, answers } = await health.stop()
  const bytes = subs.reduce((n, s) => n + s.bytes, 0)
  const summaries = subs.map((s) => s.summaries)
  const largest = Math.max(...subs.map((s) => s.largest))
  console.log(
    `annotation storm (${process.env.TEST_BACKEND ?? 'embedded'}): ${TOGGLES} toggles, ${SUBSCRIBERS} subscribers: ` +
      `${(bytes / 1e6).toFixed(1)} MB sent in ${Math.round(elapsed)} ms, summaries per subscriber ` +
      `${Math.min(...summaries)}-${Math.max(...summaries)}, largest summary frame ${largest} bytes, ` +
      `slowest /health ${Math.round(slowest)} ms (${answers} answers)`,
  )
  for (const s of subs) s.ws.close()

  expect(slowest).toBeLessThan(1000)
  for (const s of subs) expect(s.last).toEqual(expected)
  expect(largest).toBeLessThanOrEqual(SUMMARY_BYTES + ENVELOPE)
  // at most one summary per interval (a busy machine only makes the storm longer, so fewer)
  expect(Math.max(...summaries)).toBeLessThanOrEqual(Math.ceil(elapsed / INTERVAL_MS) + 2)
  // 1,000 names of 250 characters do not fit in 64 KiB even with empty client lists: the summary
  // keeps as many names as fit, each with its exact total and its list clipped
  const names = Object.values(expected['storm:distinct.v1']) as Array<{
    total: number
    clientIds: string[]
    clipped: boolean
  }>
  expect(names.length).toBeGreaterThan(100)
  expect(names.length).toBeLessThan(FIELDS)
  expect(names.every((n) => n.total === 1 && n.clipped && n.clientIds.length === 0)).toBe(true)
}, 120_000)
