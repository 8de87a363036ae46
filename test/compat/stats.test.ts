/**
 * Stats loaded through the sandbox's `POST /stats` (the older nested form, as client-library test
 * harnesses load them) and read back with the official `ably` client, msgpack and JSON: records of
 * last year stay queryable, minute by minute or rolled up, with the hosted service's `all` totals.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import * as Ably from 'ably'
import { basic, createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { clientOf, provisionApp, type ProvisionedApp } from '../helpers/sandbox'

const year = new Date().getUTCFullYear() - 1
const day = `${year}-03-05`
const minuteId = (m: number) => `${day}:10:${m}`

/** Three minutes of 5 March last year, and two minutes a month later. */
const FIXTURES = [
  {
    intervalId: minuteId(20),
    inbound: { realtime: { messages: { count: 40, data: 4000 } } },
    outbound: { realtime: { messages: { count: 15, data: 1500 } } },
  },
  {
    intervalId: minuteId(21),
    inbound: { realtime: { messages: { count: 50, data: 5000 } } },
    outbound: { realtime: { messages: { count: 25, data: 2500 } } },
  },
  {
    intervalId: minuteId(22),
    inbound: { realtime: { messages: { count: 60, data: 6000 } }, rest: { messages: { count: 5, data: 50 } } },
    outbound: { realtime: { messages: { count: 35, data: 3500 } } },
    persisted: { presence: { count: 20, data: 2000 } },
    connections: { tls: { peak: 20, opened: 10 } },
    channels: { peak: 50, opened: 30 },
    apiRequests: { succeeded: 50, failed: 10 },
    tokenRequests: { succeeded: 60, failed: 20 },
  },
  ...[7, 8].map((m) => ({
    intervalId: `${year}-04-05:15:0${m}`,
    inbound: { realtime: { messages: { count: 15, data: 4000 } } },
    outbound: { realtime: { messages: { count: 33, data: 3000 } } },
  })),
]

let gw: TestGateway
let app: ProvisionedApp
beforeAll(async () => {
  gw = await createTestGateway({ sandboxProvisioning: true })
  const base = listen(gw)
  app = await provisionApp(base)
  const r = await fetch(`${base}/stats`, {
    method: 'POST',
    headers: { authorization: basic(app.keys[0]!.keyStr), 'content-type': 'application/json' },
    body: JSON.stringify(FIXTURES),
  })
  expect(r.status).toBe(201)
})
afterAll(async () => {
  await gw.close()
})

const entry = (records: Ably.Stats[], key: string) => records.map((r) => r.entries[key])
/** The wire record's unit (ably-js types leave it out). */
const unitOf = (r: Ably.Stats) => (r as unknown as { unit: string }).unit

describe.each([
  { protocol: 'msgpack', useBinaryProtocol: true },
  { protocol: 'json', useBinaryProtocol: false },
])('ably-js rest.stats() over $protocol', ({ useBinaryProtocol }) => {
  let rest: Ably.Rest
  beforeAll(() => {
    rest = clientOf(app, useBinaryProtocol, { key: app.keys[0]!.keyStr })
  })
  /** rest.stats() with interval ids where ably-js types ask for numbers (the hosted service takes both). */
  const stats = (params: Record<string, string | number>) => rest.stats(params as Ably.StatsParams)

  test('minutes of last year by interval id, with the all totals beside the per-transport counts', async () => {
    const page = await stats({ start: minuteId(20), end: minuteId(22), direction: 'forwards' })
    const records = page.items
    expect(records.map((r) => [r.intervalId, unitOf(r)])).toEqual([
      [minuteId(20), 'minute'],
      [minuteId(21), 'minute'],
      [minuteId(22), 'minute'],
    ])
    expect(entry(records, 'messages.inbound.all.messages.count')).toEqual([40, 50, 65])
    expect(entry(records, 'messages.outbound.all.messages.count')).toEqual([15, 25, 35])
    expect(entry(records, 'messages.inbound.all.messages.data')).toEqual([4000, 5000, 6050])
    expect(entry(records, 'messages.outbound.all.messages.data')).toEqual([1500, 2500, 3500])
    expect(entry(records, 'messages.inbound.realtime.messages.count')).toEqual([40, 50, 60])
    expect(entry(records, 'messages.inbound.realtime.all.count')).toEqual([40, 50, 60])
    expect(entry(records, 'messages.inbound.all.all.count')).toEqual([40, 50, 65])
    expect(entry(records, 'messages.all.messages.count')).toEqual([55, 75, 100])
    expect(entry(records, 'messages.all.all.data')).toEqual([5500, 7500, 9550])
    const last = records[2]!.entries
    expect(last['messages.persisted.presence.count']).toBe(20)
    expect(last['messages.persisted.all.count']).toBe(20)
    expect(last['connections.all.peak']).toBe(20)
    expect(last['channels.opened']).toBe(30)
    expect(last['apiRequests.tokenRequests.succeeded']).toBe(60)
  })

  test('the same minutes by epoch milliseconds', async () => {
    const start = Date.UTC(year, 2, 5, 10, 20)
    const page = await stats({ start, end: Date.UTC(year, 3, 5, 15, 6), direction: 'forwards' })
    expect(entry(page.items, 'messages.inbound.all.messages.count')).toEqual([40, 50, 65])
  })

  test('by hour, day and month the minutes roll up', async () => {
    const hours = (await stats({ start: `${day}:10`, end: `${day}:13`, direction: 'forwards', by: 'hour' })).items
    expect(hours.map((r) => [r.intervalId, unitOf(r)])).toEqual([[`${day}:10`, 'hour']])
    expect(hours[0]!.entries['messages.inbound.all.messages.count']).toBe(155)
    expect(hours[0]!.entries['messages.outbound.all.messages.count']).toBe(75)
    const days = (await stats({ end: day, direction: 'forwards', by: 'day' })).items
    expect(days.map((r) => r.intervalId)).toEqual([`${day}:00`])
    expect(days[0]!.entries['messages.inbound.all.messages.count']).toBe(155)
    const months = (await stats({ start: `${year}-03`, end: `${year}-04`, direction: 'forwards', unit: 'month' })).items
    expect(months.map((r) => [r.intervalId, r.entries['messages.inbound.all.messages.count']])).toEqual([
      [`${year}-03-01:00`, 155],
      [`${year}-04-01:00`, 30],
    ])
  })

  test('limit 1 pages backwards (the default) and forwards; first() returns to the start', async () => {
    const data = (p: Ably.PaginatedResult<Ably.Stats>) => entry(p.items, 'messages.inbound.all.messages.data')
    let page = await stats({ end: minuteId(22), limit: 1 })
    const seen = [data(page)]
    while (page.hasNext()) {
      page = (await page.next())!
      seen.push(data(page))
    }
    expect(seen).toEqual([[6050], [5000], [4000]])
    expect(page.isLast()).toBe(true)
    expect(data(await page.first())).toEqual([6050])

    const forwards = await stats({ end: minuteId(21), limit: 1, direction: 'forwards' })
    expect(data(forwards)).toEqual([4000])
    expect(data((await forwards.next())!)).toEqual([5000])
  })

  test('the current hour carries inProgress and counts what was just published', async () => {
    await rest.channels.get('stats-now').publish('m', 'data')
    const [current] = (await stats({ end: Date.now(), unit: 'hour' })).items
    expect(current!.appId).toBe(app.appId)
    expect(typeof current!.schema).toBe('string')
    expect(current!.inProgress).toMatch(/^\d{4}-\d{2}-\d{2}:\d{2}:\d{2}$/)
    expect(current!.entries['messages.inbound.all.messages.count']).toBeGreaterThanOrEqual(1)
    expect(current!.entries['messages.inbound.rest.messages.count']).toBeGreaterThanOrEqual(1)
  })
})
