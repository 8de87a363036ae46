import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { RawSseReader } from '../helpers/raw-sse'

// A small ring (100 messages) and a small byte budget: before the reader's backlog became a
// position in the log, the stalled reader below was cut at 64 KiB of unsent bytes and its
// position had long left a 100-message ring, so it lost most of what was published.
let gw: TestGateway
let port: number
beforeAll(async () => {
  gw = await createTestGateway({ ringSize: 100, sseBufferBytes: 65_536, ringMaxBytes: 256 * 1024 * 1024 })
  port = Number(new URL(listen(gw)).port)
})
afterAll(async () => {
  await gw.close()
})

const COUNT = 4000
const payload = 'p'.repeat(4000)

test('a reader that stalls while thousands of messages are published gets every one once, in order, when it reads again', async () => {
  const reader = new RawSseReader(port, `/sse?v=1.2&channels=stall&key=${encodeURIComponent(gw.key)}`)
  try {
    await reader.until(() => reader.status === 200) // the stream's start is fixed once it answers
    reader.pause()
    // ~16 MB: far beyond the socket buffers, the byte budget and the 100-message ring
    for (let i = 0; i < COUNT; i++) {
      const r = await gw.request('/channels/stall/messages', {
        method: 'POST',
        json: { name: String(i), data: payload },
      })
      expect(r.status).toBe(201)
    }
    await Bun.sleep(300)
    reader.resume()
    await reader.until((e) => e.filter((x) => x.event === 'message').length >= COUNT, 30_000)
    const errors = reader.events.filter((e) => e.event === 'error').map((e) => JSON.parse(e.data).code)
    expect(errors).toEqual([])
    const names = reader.events.filter((e) => e.event === 'message').map((e) => JSON.parse(e.data).name)
    expect(names.length).toBe(COUNT)
    expect(names).toEqual(Array.from({ length: COUNT }, (_, i) => String(i)))
  } finally {
    reader.close()
  }
}, 60_000)

test('a reader cut while stalled resumes with its last event id and still gets every message once', async () => {
  const path = `/sse?v=1.2&channels=stall2&key=${encodeURIComponent(gw.key)}`
  const first = new RawSseReader(port, path)
  await first.until(() => first.status === 200)
  for (let i = 0; i < 10; i++)
    await gw.request('/channels/stall2/messages', { method: 'POST', json: { name: String(i), data: 'x' } })
  await first.until((e) => e.length >= 10)
  const lastId = first.events.at(-1)!.id!
  first.close() // the connection dies while messages keep coming
  for (let i = 10; i < 1000; i++)
    await gw.request('/channels/stall2/messages', { method: 'POST', json: { name: String(i), data: payload } })
  const second = new RawSseReader(port, path, { 'last-event-id': lastId })
  try {
    await second.until((e) => e.filter((x) => x.event === 'message').length >= 990, 30_000)
    expect(second.events.filter((e) => e.event === 'error')).toEqual([])
    const names = second.events.filter((e) => e.event === 'message').map((e) => Number(JSON.parse(e.data).name))
    expect(names).toEqual(Array.from({ length: 990 }, (_, i) => i + 10))
  } finally {
    second.close()
  }
}, 60_000)
