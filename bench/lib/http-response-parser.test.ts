import { describe, expect, test } from 'bun:test'
import { ResponseParser } from './http-response-parser'

const CL = (status: number, body: string, extra = '') =>
  `HTTP/1.1 ${status} X\r\nContent-Type: text/plain\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`
// second chunk: 11 bytes that contain CRLFs and a fake chunk terminator
const CHUNKED =
  'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\nB;ext=1\r\n\r\n0\r\n\r\nabcde\r\n0\r\nX-Trailer: 1\r\n\r\n'
const PIECES = [
  CL(201, '{"channel":"c","messageId":"m","serials":["1"]}'),
  'HTTP/1.1 100 Continue\r\n\r\n',
  CL(200, 'Hello, world!', 'X-Body-Looks-Like-Head: HTTP/1.1 500\r\n'),
  'HTTP/1.1 204 No Content\r\nDate: x\r\n\r\n',
  CHUNKED,
  CL(404, 'HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n'), // a body that looks like a response
  CL(500, ''),
  'HTTP/1.0 401 Unauthorized\r\nCONTENT-LENGTH:   3\r\n\r\nabc',
  CL(201, 'x'.repeat(100_000)),
]
const STREAM = Buffer.from(PIECES.join(''))
const EXPECTED = [201, 200, 204, 200, 404, 500, 401, 201]

function run(pieces: Uint8Array[]) {
  const seen: number[] = []
  const p = new ResponseParser((s) => seen.push(s))
  let done = 0
  for (const piece of pieces) done += p.feed(piece)
  return { seen, done, idle: p.idle }
}

describe('ResponseParser', () => {
  test('one coalesced buffer', () => {
    expect(run([STREAM])).toEqual({ seen: EXPECTED, done: EXPECTED.length, idle: true })
  })

  test('split at every position', () => {
    const small = Buffer.from(PIECES.slice(0, -1).join('')) // all but the big response, for speed
    for (let i = 0; i <= small.length; i++) {
      expect(run([small.subarray(0, i), small.subarray(i)]).seen).toEqual(EXPECTED.slice(0, -1))
    }
  })

  test('byte by byte, and random pieces', () => {
    const bytes = Array.from(STREAM, (_, i) => STREAM.subarray(i, i + 1))
    expect(run(bytes)).toEqual({ seen: EXPECTED, done: EXPECTED.length, idle: true })
    for (let round = 0; round < 50; round++) {
      const pieces: Uint8Array[] = []
      for (let at = 0; at < STREAM.length;) {
        const n = 1 + Math.floor(Math.random() * (Math.random() < 0.5 ? 16 : 70_000))
        pieces.push(new Uint8Array(STREAM.subarray(at, at + n))) // plain Uint8Array, not Buffer
        at += n
      }
      expect(run(pieces)).toEqual({ seen: EXPECTED, done: EXPECTED.length, idle: true })
    }
  })

  test('a partial response is not counted', () => {
    const r = run([Buffer.from(CL(201, 'abcdef')).subarray(0, -1)])
    expect(r).toEqual({ seen: [], done: 0, idle: false })
  })

  test('unframeable input throws', () => {
    expect(() => run([Buffer.from('garbage\r\n\r\n')])).toThrow(/not an HTTP/)
    expect(() => run([Buffer.from('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nabc')])).toThrow(
      /without Content-Length/,
    )
    expect(() => run([Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n')])).toThrow(/bad Content-Length/)
  })
})
