import { describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { APP_ID, createTestGateway, listen, useGateway } from '../helpers/gateway'
import { messages, openSse } from '../helpers/sse'

const ctx = useGateway({ ringSize: 5000 })

const key = () => encodeURIComponent(ctx.gw.key)
const publish = (channel: string, data: string) =>
  ctx.gw.request(`/channels/${channel}/messages`, { method: 'POST', json: { data } })
const waitSubscribed = async (channel: string, n = 1) => {
  for (let i = 0; i < 400 && ctx.gw.core.hub.count(APP_ID, channel) < n; i++) await Bun.sleep(5)
}

describe('resume', () => {
  test('lastEvent delivers exactly what was missed, on every channel of the stream', async () => {
    const qs = `v=1.2&channels=r1,r2&key=${key()}`
    const first = await openSse(`${ctx.base}/sse?${qs}`)
    await waitSubscribed('r1')
    await publish('r1', 'a1')
    await publish('r2', 'b1')
    await first.until((e) => messages(e).length === 2)
    const lastId = messages(first.events)[1]!.id!
    first.close()
    await publish('r1', 'a2')
    await publish('r2', 'b2')
    await publish('r1', 'a3')
    const second = await openSse(`${ctx.base}/sse?${qs}&lastEvent=${encodeURIComponent(lastId)}`)
    await second.until((e) => messages(e).length === 3)
    await publish('r2', 'b3')
    await second.until((e) => messages(e).length === 4)
    const got = messages(second.events).map((e) => JSON.parse(e.data))
    expect(got.filter((m) => m.channel === 'r1').map((m) => m.data)).toEqual(['a2', 'a3'])
    expect(got.filter((m) => m.channel === 'r2').map((m) => m.data)).toEqual(['b2', 'b3'])
    second.close()
  })

  test('the Last-Event-ID header resumes like lastEvent (browser reconnect)', async () => {
    const qs = `v=1.2&channels=r3&key=${key()}`
    const first = await openSse(`${ctx.base}/sse?${qs}`)
    await waitSubscribed('r3')
    await publish('r3', 'x1')
    await first.until((e) => messages(e).length === 1)
    first.close()
    await publish('r3', 'x2')
    const second = await openSse(`${ctx.base}/sse?${qs}`, { 'last-event-id': messages(first.events)[0]!.id! })
    await second.until((e) => messages(e).length === 1)
    expect(JSON.parse(messages(second.events)[0]!.data).data).toBe('x2')
    second.close()
  })

  test('reconnecting repeatedly while messages keep coming loses and duplicates nothing', async () => {
    const channels = ['race-a', 'race-b']
    const total = 3000
    const published: Record<string, string[]> = { 'race-a': [], 'race-b': [] }
    const received: Record<string, string[]> = { 'race-a': [], 'race-b': [] }
    const qs = `v=1.2&channels=${channels.join(',')}&key=${key()}`
    let lastId: string | undefined
    let reconnects = 0

    let c = await openSse(`${ctx.base}/sse?${qs}`)
    await waitSubscribed('race-a')
    await waitSubscribed('race-b')
    const publisher = (async () => {
      for (let i = 0; i < total; i++) {
        const ch = channels[i % 2]!
        const r = await publish(ch, `${ch}-${i}`)
        if (r.status !== 201) throw new Error(`publish failed: ${r.status}`)
        published[ch]!.push(`${ch}-${i}`)
        if (i % 50 === 0) await Bun.sleep(0)
      }
    })()
    let seen = 0
    const consume = () => {
      const ms = messages(c.events)
      for (; seen < ms.length; seen++) {
        const m = JSON.parse(ms[seen]!.data)
        received[m.channel]!.push(m.data)
        lastId = ms[seen]!.id
      }
    }
    while (received['race-a']!.length + received['race-b']!.length < total) {
      await c.until(
        (e) =>
          messages(e).length >= seen + 150 ||
          messages(e).length + received['race-a']!.length + received['race-b']!.length - seen >= total,
        20_000,
      )
      consume()
      if (received['race-a']!.length + received['race-b']!.length >= total) break
      c.close()
      reconnects++
      c = await openSse(`${ctx.base}/sse?${qs}&lastEvent=${encodeURIComponent(lastId!)}`)
      seen = 0
    }
    await publisher
    c.close()
    expect(reconnects).toBeGreaterThan(3)
    expect(received).toEqual(published)
  }, 60_000)

  test('an id older than what is retained gives an error event, then the stream continues', async () => {
    const small = await createTestGateway({ ringSize: 16, historyTtlMs: 1000 })
    const url = listen(small)
    try {
      const k = encodeURIComponent(small.key)
      const first = await openSse(`${url}/sse?v=1.2&channels=g&key=${k}`)
      await small.request('/channels/g/messages', { method: 'POST', json: { data: 'seen' } })
      await first.until((e) => messages(e).length === 1)
      first.close()
      for (let i = 0; i < 40; i++)
        await small.request('/channels/g/messages', { method: 'POST', json: { data: `m${i}` } })
      await Bun.sleep(1100) // past the retention window: what the client missed is gone
      await small.request('/channels/g/messages', { method: 'POST', json: { data: 'kept' } })
      const second = await openSse(
        `${url}/sse?v=1.2&channels=g&key=${k}&lastEvent=${encodeURIComponent(messages(first.events)[0]!.id!)}`,
      )
      await second.until((e) => messages(e).length === 1)
      expect(second.events[0]!.event).toBe('error')
      expect(JSON.parse(second.events[0]!.data).code).toBe(80008)
      expect(messages(second.events).map((e) => JSON.parse(e.data).data)).toEqual(['kept'])
      await small.request('/channels/g/messages', { method: 'POST', json: { data: 'live' } })
      await second.until((e) => messages(e).length === 2)
      second.close()
    } finally {
      await small.close()
    }
  })
})

describe('slow subscribers', () => {
  test('a client that stops reading is paused, publishing never waits for it, and it is cut once stalled too long', async () => {
    const tight = await createTestGateway({ sseBufferBytes: 8192, sseKeepaliveMs: 100, historyTtlMs: 600 })
    const url = new URL(listen(tight))
    const socket = connect(Number(url.port), url.hostname)
    try {
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()))
      socket.write(`GET /sse?v=1.2&channels=slow&key=${encodeURIComponent(tight.key)} HTTP/1.1\r\nHost: x\r\n\r\n`)
      socket.pause()
      for (let i = 0; i < 400 && tight.core.hub.count(APP_ID, 'slow') < 1; i++) await Bun.sleep(5)
      expect(tight.core.hub.count(APP_ID, 'slow')).toBe(1)
      const payload = 'x'.repeat(60_000)
      for (let i = 0; i < 300; i++) {
        const r = await tight.request('/channels/slow/messages', { method: 'POST', json: { data: payload } })
        expect(r.status).toBe(201)
      }
      for (let i = 0; i < 400 && tight.core.hub.count(APP_ID, 'slow') > 0; i++) await Bun.sleep(10)
      expect(tight.core.hub.count(APP_ID, 'slow')).toBe(0)
    } finally {
      socket.destroy()
      await tight.close()
    }
  }, 30_000)
})
