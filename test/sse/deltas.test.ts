/**
 * Event streams with deltas, as the hosted service serves them to SSE consumers (`@ably/delta-codec`
 * use cases): the `[?delta=vcdiff]` channel qualifier and the `delta=vcdiff` query param, enveloped
 * (a delta's `data` base64 with `extras.delta` `{from, format}`) and not enveloped (the delta's
 * base64 alone), SSE and newline-delimited JSON; every event decoded with `@ably/vcdiff-decoder`
 * against the previous one to the message published, and a resume (`lastEvent`) or a rewind
 * starting with a whole message.
 */
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { decode } from '@ably/vcdiff-decoder'
import { APP_ID, createTestGateway, listen, type TestGateway } from '../helpers/gateway'
import { messages, openSse, type SseClient } from '../helpers/sse'

let gw: TestGateway
let base: string
const open: SseClient[] = []
beforeAll(async () => {
  gw = await createTestGateway({ sseKeepaliveMs: 200 })
  base = listen(gw)
})
afterAll(async () => {
  for (const c of open) c.close()
  await gw.close()
})

let seq = 0
const fresh = (p: string) => `${p}-${++seq}-${Math.random().toString(36).slice(2, 7)}`
const key = () => encodeURIComponent(gw.key)
const sse = async (qs: string) => {
  const c = await openSse(`${base}/sse?v=1.2&key=${key()}&${qs}`)
  open.push(c)
  expect(c.status).toBe(200)
  return c
}
const publish = async (channel: string, body: unknown) => {
  const r = await gw.request(`/channels/${encodeURIComponent(channel)}/messages`, { method: 'POST', json: body })
  expect(r.status).toBe(201)
}
const subscribed = async (channel: string, n = 1) => {
  for (let i = 0; i < 400 && gw.core.hub.count(APP_ID, channel) < n; i++) await Bun.sleep(5)
  expect(gw.core.hub.count(APP_ID, channel)).toBeGreaterThanOrEqual(n)
}

/** A JSON state of ~2 KiB in which a field changes per message, or a growing text. */
function stream(n: number, kind: 'state' | 'text' = 'state'): Array<{ name: string; data: string }> {
  const state: Record<string, number | string> = {}
  for (let k = 0; k < 100; k++) state[`field_${k}`] = `value-${k}`
  const out: Array<{ name: string; data: string }> = []
  let text = 'Once upon a time'
  for (let i = 0; i < n; i++) {
    state[`field_${(i * 7) % 100}`] = i
    text += ` and then ${i}`
    out.push({ name: kind, data: kind === 'state' ? JSON.stringify(state) : text })
  }
  return out
}

const utf8 = new TextDecoder()

/** Decodes enveloped events as the hosted service's SSE consumers do (CheckedVcdiffDecoder): the payloads, and how many were deltas. */
function decodeEnveloped(datas: string[]): { values: string[]; deltas: number } {
  let base: Uint8Array | undefined
  let baseId: string | undefined
  let deltas = 0
  const values = datas.map((d) => {
    const m = JSON.parse(d)
    let bytes: Uint8Array
    if (m.extras?.delta) {
      expect(m.extras.delta).toEqual({ from: baseId, format: 'vcdiff' })
      expect(m.encoding).toBe('utf-8/vcdiff/base64')
      bytes = decode(Buffer.from(m.data, 'base64'), base!)
      deltas++
    } else {
      expect(m.encoding).toBeUndefined()
      bytes = Buffer.from(m.data, 'utf8')
    }
    base = bytes
    baseId = m.id
    return utf8.decode(bytes)
  })
  return { values, deltas }
}

describe('event streams with deltas', () => {
  test('[?delta=vcdiff]: each message after the first is a delta of the previous, decoded to what was published', async () => {
    const ch = fresh('sse-delta')
    const c = await sse(`channels=${encodeURIComponent(`[?delta=vcdiff]${ch}`)}`)
    const plain = await sse(`channels=${encodeURIComponent(ch)}`)
    await subscribed(ch, 2)
    const sent = stream(30)
    for (const m of sent) await publish(ch, m)
    await c.until((e) => messages(e).length >= sent.length)
    await plain.until((e) => messages(e).length >= sent.length)
    const { values, deltas } = decodeEnveloped(messages(c.events).map((e) => e.data))
    expect(values).toEqual(sent.map((m) => m.data))
    expect(deltas).toBe(sent.length - 1)
    // the plain stream is whole, and the same ids
    const whole = messages(plain.events).map((e) => JSON.parse(e.data))
    expect(whole.map((m) => m.data)).toEqual(sent.map((m) => m.data))
    expect(whole.every((m) => !m.extras)).toBe(true)
    expect(messages(c.events).map((e) => e.id)).toEqual(messages(plain.events).map((e) => e.id))
    // fewer bytes on the wire
    const bytes = (x: SseClient) => messages(x.events).reduce((n, e) => n + e.data.length, 0)
    expect(bytes(c)).toBeLessThan(bytes(plain) * 0.3)
  })

  test('delta=vcdiff query param, not enveloped, over newline-delimited JSON: the delta base64 alone', async () => {
    const ch = fresh('sse-raw')
    const r = await fetch(`${base}/event-stream?v=1.2&key=${key()}&delta=vcdiff&enveloped=false&channels=${ch}`)
    expect(r.status).toBe(200)
    const reader = r.body!.getReader()
    await subscribed(ch)
    const sent = stream(8, 'text')
    for (const m of sent) await publish(ch, m)
    let text = ''
    const lines = () => text.split('\n').filter((l) => l.startsWith('{"event":"message"'))
    while (lines().length < sent.length) text += utf8.decode((await reader.read()).value)
    await reader.cancel()
    let prev: Uint8Array | undefined
    let deltas = 0
    const values = lines().map((l) => {
      const data = JSON.parse(l).data as string
      // the hosted consumers sniff the VCDIFF header in the base64 (VcdiffDecoder.isBase64Delta)
      const bytes = Buffer.from(data, 'base64')
      const isDelta = bytes[0] === 0xd6 && bytes[1] === 0xc3 && bytes[2] === 0xc4 && bytes[3] === 0
      if (isDelta) deltas++
      prev = isDelta ? decode(bytes, prev!) : Buffer.from(data, 'utf8')
      return utf8.decode(prev)
    })
    expect(values).toEqual(sent.map((m) => m.data))
    expect(deltas).toBe(sent.length - 1)
  })

  test('a resume (lastEvent) and a rewind start with a whole message, then deltas again', async () => {
    const ch = fresh('sse-resume')
    const q = encodeURIComponent(`[?delta=vcdiff]${ch}`)
    const first = await sse(`channels=${q}`)
    await subscribed(ch)
    const sent = stream(12)
    for (const m of sent.slice(0, 6)) await publish(ch, m)
    await first.until((e) => messages(e).length >= 6)
    first.close()
    const lastEvent = encodeURIComponent(messages(first.events)[2]!.id!)
    const resumed = await sse(`channels=${q}&lastEvent=${lastEvent}`)
    const rewound = await sse(`channels=${q}&rewind=2`)
    await subscribed(ch, 2)
    for (const m of sent.slice(6)) await publish(ch, m)
    await resumed.until((e) => messages(e).length >= sent.length - 3)
    await rewound.until((e) => messages(e).length >= sent.length - 4)
    for (const [c, from] of [
      [resumed, 3],
      [rewound, 4],
    ] as const) {
      const datas = messages(c.events).map((e) => e.data)
      expect(JSON.parse(datas[0]!).extras).toBeUndefined()
      expect(decodeEnveloped(datas).values).toEqual(sent.slice(from).map((m) => m.data))
    }
  })

  test('another delta format is ignored (whole messages); another qualifier param is 40010', async () => {
    const ch = fresh('sse-other')
    const c = await sse(`channels=${encodeURIComponent(`[?delta=xdelta]${ch}`)}`)
    await subscribed(ch)
    const sent = stream(3)
    for (const m of sent) await publish(ch, m)
    await c.until((e) => messages(e).length >= sent.length)
    expect(messages(c.events).every((e) => !JSON.parse(e.data).extras)).toBe(true)
    for (const name of [`[?rewind=1]${ch}`, `[?delta=vcdiff${ch}`, '[?delta=vcdiff]', '[?delta=vcdiff][meta]x']) {
      const bad = await openSse(`${base}/sse?v=1.2&key=${key()}&channels=${encodeURIComponent(name)}`)
      expect(bad.status).toBe(400)
      expect(((await bad.response.json()) as any).error.code).toBe(40010)
    }
  })
})
