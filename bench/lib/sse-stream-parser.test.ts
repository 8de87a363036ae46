import { describe, expect, test } from 'bun:test'
import { sequenceData } from './sequence-payload'
import { SseStreamParser } from './sse-stream-parser'

const HEAD = 'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n'
const record = (publisher: number, seq: number, stamp?: number) =>
  `id: 11s3ljt:mwq${seq}\nevent: message\ndata: ${JSON.stringify({ id: `m${seq}:0`, timestamp: 1795258547989, channel: 'c', name: 'bench', data: sequenceData(publisher, seq, stamp, 'xx'), serial: `01795258547989-${seq}` })}\n\n`
const chunk = (s: string) => `${Buffer.byteLength(s).toString(16)}\r\n${s}\r\n`

/** A response of keepalives, batches of records, an error record and the terminating chunk. */
function stream(): { bytes: Buffer; expected: Array<[number, number, number]> } {
  const expected: Array<[number, number, number]> = []
  let body = chunk('\n')
  let seq = 0
  for (let batch = 0; batch < 40; batch++) {
    let text = ''
    for (let k = 0; k <= batch % 7; k++) {
      const stamp = batch % 2 ? 1795258547989123 + seq : undefined
      expected.push([batch % 3, seq, stamp ?? 0])
      text += record(batch % 3, seq++, stamp)
    }
    body += chunk(text) + (batch % 5 === 0 ? chunk('\n') : '')
  }
  body += chunk('event: error\ndata: {"error":{"code":80020}}\n\n') + '0\r\n\r\n'
  return { bytes: Buffer.from(HEAD + body), expected }
}

function run(pieces: Buffer[]) {
  const seen: Array<[number, number, number]> = []
  const p = new SseStreamParser(7, {
    message: (sub, pub, seq, stamp) => {
      expect(sub).toBe(7)
      seen.push([pub, seq, stamp])
    },
  })
  for (const piece of pieces) p.feed(piece)
  return { p, seen }
}

describe('SseStreamParser', () => {
  const { bytes, expected } = stream()

  test('whole stream in one read', () => {
    const { p, seen } = run([bytes])
    expect(p.status).toBe(200)
    expect(seen).toEqual(expected)
    expect(p.messages).toBe(expected.length)
    expect(p.ended).toBe(true)
    expect(p.lastError()).toBe('{"error":{"code":80020}}')
  })

  test('every split point, and byte by byte', () => {
    for (let at = 1; at < bytes.length; at += 3) {
      const { p, seen } = run([bytes.subarray(0, at), bytes.subarray(at)])
      expect(seen).toEqual(expected)
      expect(p.ended).toBe(true)
    }
    const { seen } = run([...bytes].map((b) => Buffer.from([b])))
    expect(seen).toEqual(expected)
  })

  test('a non-200 response keeps its head and body for the report', () => {
    const { p, seen } = run([Buffer.from('HTTP/1.1 401 Unauthorized\r\nContent-Length: 9\r\n\r\n{"e":401}')])
    expect(p.status).toBe(401)
    expect(p.ended).toBe(true)
    expect(p.headText).toContain('{"e":401}')
    expect(seen).toEqual([])
  })
})
