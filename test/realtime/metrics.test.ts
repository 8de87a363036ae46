/**
 * Realtime traffic in `/metrics`, with the official client: a realtime publish and its delivery
 * move the published and delivered counters of the realtime transport (not REST's), the ACK and
 * delivery latency histograms, the connection, attachment and presence gauges; a socket that
 * cannot take a burst is counted as a slow-consumer pause. `/metrics` is scraped before and
 * after; other files of the run share the registry, so only differences are asserted.
 */
import { expect, test } from 'bun:test'
import { collect, connectedClient, fresh, realtimeGateway } from '../helpers/realtime'
import { parseExposition, type Family } from '../helpers/prometheus'

const rt = realtimeGateway({
  realtimeBufferBytes: 4096,
  maxMessageSize: 8 * 1024 * 1024,
  maxBodySize: 16 * 1024 * 1024,
})

type Scrape = Map<string, Family>
const scrape = async (): Promise<Scrape> => parseExposition(await (await fetch(`${rt.base}/metrics`)).text())

/** The sample of `name` (a sample name: a histogram's `_count`...) whose labels include `labels`; 0 when absent. */
function value(s: Scrape, family: string, labels: Record<string, string> = {}, name = family): number {
  const f = s.get(family)
  if (!f) throw new Error(`no metric family ${family}`)
  const sample = f.samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v))
  return sample?.value ?? 0
}

const REALTIME = { transport: 'realtime' }
const REST = { transport: 'rest' }

test('a realtime publish and its delivery move the realtime metrics, not the REST ones', async () => {
  const channel = fresh('metered')
  const sub = await connectedClient(rt.port, { key: rt.gw.key, clientId: 'watcher' }, false)
  const pub = await connectedClient(rt.port, { key: rt.gw.key, clientId: 'writer' })
  const got = await collect(sub.channels.get(channel))
  const before = await scrape()

  const ch = pub.channels.get(channel)
  await ch.presence.enter('here')
  for (let i = 0; i < 5; i++) await ch.publish('m', `v${i}`)
  await got.until(5)
  const after = await scrape()
  const delta = (family: string, labels?: Record<string, string>, name?: string) =>
    value(after, family, labels, name) - value(before, family, labels, name)

  expect(delta('gateway_messages_published_total', REALTIME)).toBeGreaterThanOrEqual(5)
  expect(delta('gateway_messages_published_total', REST)).toBe(0)
  // the subscriber's 5 at least (the publisher, attached by its presence, has them echoed too)
  expect(delta('gateway_messages_delivered_total', REALTIME)).toBeGreaterThanOrEqual(5)
  // 5 publishes and the presence enter, each answered by an ACK
  const acks = delta('gateway_realtime_ack_seconds', {}, 'gateway_realtime_ack_seconds_count')
  expect(acks).toBeGreaterThanOrEqual(6)
  expect(delta('gateway_realtime_ack_seconds', {}, 'gateway_realtime_ack_seconds_sum')).toBeGreaterThan(0)
  expect(after.get('gateway_realtime_ack_seconds')!.type).toBe('histogram')
  expect(
    delta('gateway_delivery_latency_seconds', {}, 'gateway_delivery_latency_seconds_count'),
  ).toBeGreaterThanOrEqual(1)
  expect(after.get('gateway_delivery_latency_seconds')!.type).toBe('histogram')
  expect(value(after, 'gateway_connections', REALTIME)).toBeGreaterThanOrEqual(2)
  expect(value(after, 'gateway_realtime_attachments')).toBeGreaterThanOrEqual(2)
  expect(value(after, 'gateway_presence_members')).toBeGreaterThanOrEqual(1)
  // the counters of slow consumers are there from the start (zero until one is slow)
  expect(after.has('gateway_realtime_slow_consumers_paused_total')).toBe(true)
  expect(after.has('gateway_realtime_slow_consumers_cut_total')).toBe(true)

  // a REST publish counts as REST, and its delivery over realtime as realtime
  const restBefore = value(after, 'gateway_messages_published_total', REST)
  const r = await rt.gw.request(`/channels/${channel}/messages`, { method: 'POST', json: { name: 'r', data: 'x' } })
  expect(r.status).toBe(201)
  await got.until(6)
  const last = await scrape()
  expect(value(last, 'gateway_messages_published_total', REST) - restBefore).toBe(1)
  expect(value(last, 'gateway_messages_delivered_total', REALTIME)).toBeGreaterThan(
    value(after, 'gateway_messages_delivered_total', REALTIME),
  )

  // the presence member leaves with its client's leave
  await ch.presence.leave()
  const gone = await scrape()
  expect(value(gone, 'gateway_presence_members')).toBe(value(after, 'gateway_presence_members') - 1)
})

test('a burst beyond REALTIME_BUFFER_BYTES counts a slow-consumer pause', async () => {
  const name = fresh('burst')
  const sub = await connectedClient(rt.port, { key: rt.gw.key }, false)
  const got = await collect(sub.channels.get(name))
  const before = await scrape()
  // one delivery of 6 MB for a socket allowed 4 KB unsent: its subscription pauses, then catches up
  const body = Array.from({ length: 6 }, (_, i) => ({ name: `m${i}`, data: 'x'.repeat(1024 * 1024) }))
  const r = await rt.gw.request(`/channels/${name}/messages`, { method: 'POST', json: body })
  expect(r.status).toBe(201)
  await got.until(6, 15_000)
  const after = await scrape()
  const paused = 'gateway_realtime_slow_consumers_paused_total'
  expect(value(after, paused) - value(before, paused)).toBeGreaterThanOrEqual(1)
  expect(sub.connection.state).toBe('connected')
})
