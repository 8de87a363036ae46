import { describe, expect, test } from 'bun:test'
import { EventStreamConnection, type ConnectionOptions } from '../../src/api/sse/connection'
import type { Message } from '../../src/core/types'

/** A connection of one channel whose stream has begun, writing into a list. */
function connection(mode: ConnectionOptions['mode'], written: Array<string | Uint8Array>) {
  const c = new EventStreamConnection({
    mode,
    enveloped: false,
    heartbeats: false,
    channels: ['ch'],
    hash: 'h',
    budget: 1 << 20,
    stallMs: 60_000,
    now: () => 0,
    onClose: () => {},
  })
  ;(c as unknown as { controller: unknown }).controller = {
    write: (chunk: string | Uint8Array) => {
      written.push(chunk)
      return chunk.length
    },
    flush: () => {},
    close: () => {},
  }
  return c
}

const batch = (i: number): Message[] => [
  { id: `m${i}`, name: 'n', data: `d${i}`, serial: `01700000000000-${String(i).padStart(6, '0')}`, timestamp: 1 },
]
const text = (chunk: string | Uint8Array) => (typeof chunk === 'string' ? chunk : new TextDecoder().decode(chunk))

describe('event-stream records of a batch, shared by the connections of its channel', () => {
  test('each variant gets its own text, and a connection of a variant already written gets its bytes', () => {
    const sseA: Array<string | Uint8Array> = []
    const ndjson: Array<string | Uint8Array> = []
    const sseB: Array<string | Uint8Array> = []
    const a = connection('sse', sseA)
    const n = connection('ndjson', ndjson)
    const b = connection('sse', sseB)
    const first = batch(1)
    for (const c of [a, n, b]) c.deliver(0, first)
    expect(sseA).toHaveLength(1)
    expect(typeof sseA[0]).toBe('string')
    expect(sseA[0]).toContain('event: message\ndata: d1\n\n')
    expect(text(ndjson[0]!)).toBe(
      '{"event":"message","id":"h:' + text(sseA[0]!).split('h:')[1]!.split('\n')[0] + '","data":"d1"}\n',
    )
    // the second connection of the first variant writes the very bytes encoded once for it
    expect(sseB[0]).toBeInstanceOf(Uint8Array)
    expect(text(sseB[0]!)).toBe(sseA[0] as string)
    /** A batch delivered to `a`, then `others` batches to connections of other channels, then to `b`. */
    const apart = (n: number, others: number) => {
      const one = batch(n)
      a.deliver(0, one)
      for (let i = 0; i < others; i++) connection('sse', []).deliver(0, batch(100 + i))
      b.deliver(0, one)
    }
    // a few other batches between two connections of a channel (other channels, filters): still shared
    apart(2, 3)
    expect(sseB[1]).toBeInstanceOf(Uint8Array)
    expect(text(sseB[1]!)).toBe(sseA[1] as string)
    // many: the text is made again, the same
    apart(3, 20)
    expect(text(sseB[2]!)).toBe(sseA[2] as string)
  })
})
