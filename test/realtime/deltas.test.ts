/**
 * VCDIFF deltas (`delta=vcdiff`, RTL18-RTL21, PC3) with the official `ably` client and its
 * decoder plugin (`@ably/vcdiff-decoder`), over WebSocket in msgpack and JSON and over comet:
 * the client's own delta tests (ably-js `test/realtime/delta.test.js`: deltaPlugin,
 * unusedPlugin, lastMessageNotFoundRecovery, deltaDecodeFailureRecovery, noPlugin) and payloads
 * of every kind (JSON, text, binary, none, too different) decoded to the originals, `echo=false`
 * chains, and `delta` echoed in ATTACHED only when honoured.
 */
import { describe, expect, test } from 'bun:test'
import type * as Ably from 'ably'
import * as vcdiffDecoder from '@ably/vcdiff-decoder'
import { collect, fresh, reach, realtimeClient, realtimeGateway } from '../helpers/realtime'

const rt = realtimeGateway()

const testData = [
  { foo: 'bar', count: 1, status: 'active' },
  { foo: 'bar', count: 2, status: 'active' },
  { foo: 'bar', count: 2, status: 'inactive' },
  { foo: 'bar', count: 3, status: 'inactive' },
  { foo: 'bar', count: 3, status: 'active' },
]

/** The client tests' decoder: the real one, counting its calls. */
function countingDecoder() {
  return {
    numberOfCalls: 0,
    decode(delta: Uint8Array, base: Uint8Array) {
      this.numberOfCalls++
      return vcdiffDecoder.decode(delta, base)
    },
  }
}

const TRANSPORTS = [
  ['WebSocket msgpack', { binary: true, transports: undefined }],
  ['WebSocket JSON', { binary: false, transports: undefined }],
  ['comet', { binary: false, transports: ['comet'] }],
] as const

async function publishAll(ch: Ably.RealtimeChannel, data: unknown[]) {
  for (let i = 0; i < data.length; i++) await ch.publish(String(i), data[i])
}

describe.each(TRANSPORTS)('deltas over %s', (_name, t) => {
  const client = async (opts: Omit<Ably.ClientOptions, 'endpoint' | 'port' | 'tls'> = {}) => {
    const c = realtimeClient(
      rt.port,
      { key: rt.gw.key, ...(t.transports ? { transports: [...t.transports] } : {}), ...opts },
      t.binary,
    )
    await reach(c.connection, 'connected')
    return c
  }
  const deltaChannel = (c: Ably.Realtime, name: string) => c.channels.get(name, { params: { delta: 'vcdiff' } })

  test('deltaPlugin: every message after the first is a delta, decoded to the original', async () => {
    const decoder = countingDecoder()
    const c = await client({ plugins: { vcdiff: decoder } })
    const ch = deltaChannel(c, fresh('deltaPlugin'))
    await ch.attach()
    expect(ch.params).toEqual({ delta: 'vcdiff' })
    const reattached: unknown[] = []
    ch.on('attaching', (s) => reattached.push(s.reason))
    const got = await collect(ch)
    await publishAll(ch, testData)
    const messages = await got.until(testData.length)
    expect(messages.map((m) => m.data)).toEqual(testData)
    expect(messages.map((m) => m.name)).toEqual(['0', '1', '2', '3', '4'])
    expect(decoder.numberOfCalls).toBe(testData.length - 1)
    expect(reattached).toEqual([])
  })

  test('unusedPlugin, and a delta param of another format: whole messages, delta not echoed', async () => {
    const decoder = countingDecoder()
    const c = await client({ plugins: { vcdiff: decoder } })
    const name = fresh('unusedPlugin')
    const plain = c.channels.get(name)
    const other = (await client({ plugins: { vcdiff: decoder } })).channels.get(name, {
      params: { delta: 'xdelta' },
    })
    await other.attach()
    expect(other.params).toEqual({})
    const a = await collect(plain)
    const b = await collect(other)
    await publishAll(plain, testData)
    expect((await a.until(testData.length)).map((m) => m.data)).toEqual(testData)
    expect((await b.until(testData.length)).map((m) => m.data)).toEqual(testData)
    expect(decoder.numberOfCalls).toBe(0)
  })

  test('noPlugin: a client without a decoder that asks for deltas gets its channel failed with 40019', async () => {
    const c = await client()
    const name = fresh('noPlugin')
    const ch = deltaChannel(c, name)
    await ch.attach()
    const failed = reach(ch, 'failed', 8000, [])
    await publishAll((await client()).channels.get(name), testData)
    await failed
    expect(ch.errorReason?.code).toBe(40019)
  })

  test('lastMessageNotFoundRecovery: a lost base makes the client re-attach (40018) and the next message comes whole', async () => {
    const decoder = countingDecoder()
    const c = await client({ plugins: { vcdiff: decoder } })
    const ch = deltaChannel(c, fresh('lastMessageNotFound'))
    await ch.attach()
    const reasons: Array<number | undefined> = []
    const received: Ably.InboundMessage[] = []
    let done!: () => void
    const finished = new Promise<void>((r) => (done = r))
    await ch.subscribe((m) => {
      received.push(m)
      const index = Number(m.name)
      if (index === 1) {
        // simulate a lost message, as the client's own test does
        ;(ch as unknown as { _lastPayload: { messageId: string | null } })._lastPayload.messageId = null
        ch.on('attaching', (s) => reasons.push(s.reason?.code))
      }
      if (index === testData.length - 1) done()
    })
    await publishAll(ch, testData)
    await finished
    expect(received.map((m) => m.data)).toEqual(testData)
    expect(reasons).toEqual([40018])
    // one message went whole after the re-attach (RTL18b)
    expect(decoder.numberOfCalls).toBe(testData.length - 2)
  })

  test('deltaDecodeFailureRecovery: with a decoder that always fails, every message still arrives (whole after each re-attach)', async () => {
    const failing = {
      decode() {
        throw new Error('Failed to decode delta.')
      },
    }
    const c = await client({ plugins: { vcdiff: failing } })
    const ch = deltaChannel(c, fresh('decodeFailure'))
    await ch.attach()
    const reasons: Array<number | undefined> = []
    ch.on('attaching', (s) => reasons.push(s.reason?.code))
    const got = await collect(ch)
    await publishAll(ch, testData)
    const messages = await got.until(testData.length, 15_000)
    expect(messages.map((m) => m.data)).toEqual(testData)
    expect(reasons.length).toBeGreaterThan(0)
    expect(new Set(reasons)).toEqual(new Set([40018]))
  })

  test('payloads of every kind decode to the originals: JSON, growing text, binary, none, unrelated', async () => {
    const decoder = countingDecoder()
    const pub = await client()
    const sub = await client({ plugins: { vcdiff: decoder } })
    const name = fresh('kinds')
    const ch = deltaChannel(sub, name)
    const got = await collect(ch)
    const state: Record<string, number | string> = {}
    for (let k = 0; k < 60; k++) state[`field_${k}`] = k * 1000
    // a text that does not repeat itself (a repeating one compresses against itself, whatever the base)
    const words = ['quick', 'brown', 'fox', 'jumps', 'over', 'the', 'lazy', 'dog', 'and', 'runs', 'away']
    const text = Array.from({ length: 150 }, (_, i) => words[(i * i + 3 * i) % words.length]! + i).join(' ')
    const bin = new Uint8Array(1500).map((_, i) => (i * 31) & 255)
    const bin2 = bin.slice()
    bin2[700] = 1
    const unrelated = new Uint8Array(1500).map(() => Math.floor(Math.random() * 256))
    const data: unknown[] = [
      { ...state },
      { ...state, field_7: 'changed' },
      text,
      text + 'And then some.',
      text + 'And then some. And more.',
      bin,
      bin2,
      undefined,
      text,
      unrelated,
      'ünïcødé ✓ '.repeat(30),
      'ünïcødé ✓ '.repeat(30) + '!',
    ]
    const p = pub.channels.get(name)
    for (let i = 0; i < data.length; i++) await p.publish(String(i), data[i])
    const messages = await got.until(data.length)
    for (let i = 0; i < data.length; i++) {
      const want = data[i]
      const have = messages[i]!.data
      if (want instanceof Uint8Array) expect(Buffer.from(have as Uint8Array).equals(Buffer.from(want))).toBe(true)
      else if (want === undefined) expect(have ?? undefined).toBeUndefined()
      else expect(have).toEqual(want)
    }
    // deltas at least: 1 (state), 3, 4 (text), 5 (a periodic binary: copies of itself), 6 (binary),
    // 10 (a repeated text: copies of itself), 11; whole at least: 0 (first), 8 (after a message
    // without data), 9 (random bytes)
    expect(decoder.numberOfCalls).toBeGreaterThanOrEqual(7)
    expect(decoder.numberOfCalls).toBeLessThanOrEqual(data.length - 3)
  })

  test('echo=false: the connection own messages are not in its chain', async () => {
    const decoder = countingDecoder()
    const name = fresh('echo-off')
    const a = await client({ plugins: { vcdiff: decoder }, echoMessages: false })
    const b = await client()
    const ca = deltaChannel(a, name)
    const got = await collect(ca)
    const cb = b.channels.get(name)
    await cb.attach()
    const sent: unknown[] = []
    for (let i = 0; i < 8; i++) {
      const d = { ...testData[i % testData.length]!, seq: i }
      if (i % 2) {
        sent.push(d)
        await cb.publish(String(i), d)
      } else await ca.publish(String(i), d)
    }
    const messages = await got.until(sent.length)
    expect(messages.map((m) => m.data)).toEqual(sent)
    expect(decoder.numberOfCalls).toBe(sent.length - 1)
  })
})
