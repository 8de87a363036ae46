import { describe, expect, test } from 'bun:test'
import { RespError, RespReader, type RespValue } from '../../src/backend/redis/resp-reader'

const plain = (v: RespValue): unknown =>
  Buffer.isBuffer(v)
    ? { bulk: v.toString('latin1') }
    : v instanceof RespError
      ? { error: v.message }
      : Array.isArray(v)
        ? v.map(plain)
        : v

/** The values read from `chunks`; with `sharded`, sharded messages through their own path, shown as the value they are. */
function readAll(chunks: Buffer[], sharded = false): unknown[] {
  const out: unknown[] = []
  const r = new RespReader(
    (v) => out.push(plain(v)),
    sharded
      ? (buf, from, to, payload) =>
          out.push([
            { bulk: 'smessage' },
            { bulk: buf.toString('latin1', from, to) },
            { bulk: payload.toString('latin1') },
          ])
      : undefined,
  )
  for (const c of chunks) r.feed(c)
  return out
}

// a payload with CR LF and bytes past ASCII inside it, as msgpack bodies have
const binary = Buffer.from([0x93, 0x0d, 0x0a, 0xff, 0x00, 0x24, 0x2a, 0x0d])
const stream = Buffer.concat([
  Buffer.from('*3\r\n$8\r\nsmessage\r\n$4\r\nch:1\r\n$8\r\n'),
  binary,
  Buffer.from('\r\n*3\r\n$10\r\nssubscribe\r\n$4\r\nch:2\r\n:12\r\n'),
  Buffer.from('+OK\r\n-MOVED 3999 127.0.0.1:7002\r\n$-1\r\n*-1\r\n:-7\r\n*0\r\n$0\r\n\r\n'),
  Buffer.from('*2\r\n*1\r\n:1\r\n$3\r\nabc\r\n'),
])
const expected = [
  [{ bulk: 'smessage' }, { bulk: 'ch:1' }, { bulk: binary.toString('latin1') }],
  [{ bulk: 'ssubscribe' }, { bulk: 'ch:2' }, 12],
  'OK',
  { error: 'MOVED 3999 127.0.0.1:7002' },
  null,
  null,
  -7,
  [],
  { bulk: '' },
  [[1], { bulk: 'abc' }],
]

describe('RESP reader', () => {
  test('reads every value of a stream read whole', () => {
    expect(readAll([stream])).toEqual(expected)
  })

  for (const sharded of [false, true])
    describe(sharded ? 'sharded messages through their own path' : 'every value made', () => {
      test('reads the same values whatever byte the stream is cut at, once or twice', () => {
        expect(readAll([stream], sharded)).toEqual(expected)
        for (let a = 1; a < stream.length; a++) {
          expect(readAll([stream.subarray(0, a), stream.subarray(a)], sharded)).toEqual(expected)
          for (let b = a + 1; b < stream.length; b += 7)
            expect(readAll([stream.subarray(0, a), stream.subarray(a, b), stream.subarray(b)], sharded)).toEqual(
              expected,
            )
        }
      })

      test('reads the same values when the stream comes a byte at a time', () => {
        expect(
          readAll(
            [...stream].map((b) => Buffer.from([b])),
            sharded,
          ),
        ).toEqual(expected)
      })
    })

  test('a sharded message is handed to its own path, not made into values', () => {
    const values: RespValue[] = []
    const messages: string[] = []
    const r = new RespReader(
      (v) => values.push(v),
      (buf, from, to, payload) => messages.push(`${buf.toString('utf8', from, to)}=${payload.toString()}`),
    )
    r.feed(Buffer.from('*3\r\n$8\r\nsmessage\r\n$5\r\nch:é\r\n$2\r\nhi\r\n:1\r\n'))
    expect(messages).toEqual(['ch:é=hi'])
    expect(values).toEqual([1])
  })

  test('a large bulk string in many chunks is read once, whole, and is joined only when complete', () => {
    const body = Buffer.alloc(1 << 20, 0x61)
    const whole = Buffer.concat([
      Buffer.from(`*3\r\n$8\r\nsmessage\r\n$1\r\nc\r\n$${body.length}\r\n`),
      body,
      Buffer.from('\r\n'),
    ])
    const got: RespValue[] = []
    const r = new RespReader((v) => got.push(v))
    const joins = { n: 0 }
    const concat = Buffer.concat
    Buffer.concat = ((list: Uint8Array[], len?: number) => {
      joins.n++
      return concat(list, len)
    }) as typeof Buffer.concat
    try {
      for (let i = 0; i < whole.length; i += 65536) r.feed(whole.subarray(i, i + 65536))
    } finally {
      Buffer.concat = concat
    }
    expect(got).toHaveLength(1)
    expect(((got[0] as RespValue[])[2] as Buffer).equals(body)).toBe(true)
    expect(joins.n).toBe(1)
  })

  test('reset forgets a value cut short', () => {
    const out: unknown[] = []
    const r = new RespReader((v) => out.push(plain(v)))
    r.feed(Buffer.from('*3\r\n$8\r\nsmess'))
    r.reset()
    r.feed(Buffer.from(':5\r\n'))
    expect(out).toEqual([5])
  })

  test('a byte that starts no RESP value is an error, not a value', () => {
    expect(() => readAll([Buffer.from('?what\r\n')])).toThrow(/RESP type/)
  })
})
