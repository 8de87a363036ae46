import { connect, type TLSSocket } from 'node:tls'

/**
 * A raw HTTP/2 client over TLS (ALPN `h2`) for hostile tests: it writes frames as given, whether
 * or not the protocol allows them (streams past the server's limit, resets in a flood, header
 * blocks that never end), and records what the server sends back by frame type. Header blocks
 * are HPACK literals without Huffman coding (and, for the bomb, indexed references).
 */
export const FRAME = {
  DATA: 0x0,
  HEADERS: 0x1,
  RST_STREAM: 0x3,
  SETTINGS: 0x4,
  PING: 0x6,
  GOAWAY: 0x7,
  WINDOW_UPDATE: 0x8,
  CONTINUATION: 0x9,
} as const
export const FLAG = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4 } as const
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')

/** An HPACK integer with an N-bit prefix (RFC 7541 5.1), `first` holding the pattern bits. */
function hpackInt(value: number, prefixBits: number, first = 0): number[] {
  const max = (1 << prefixBits) - 1
  if (value < max) return [first | value]
  const out = [first | max]
  value -= max
  while (value >= 128) {
    out.push((value % 128) + 128)
    value = Math.floor(value / 128)
  }
  out.push(value)
  return out
}
const hpackString = (s: string) => {
  const b = Buffer.from(s)
  return Buffer.concat([Buffer.from(hpackInt(b.length, 7)), b])
}

/** A header block of literals without indexing (new names), in order. */
export function headerBlock(headers: Array<[string, string]>): Buffer {
  return Buffer.concat(headers.flatMap(([k, v]) => [Buffer.from([0x00]), hpackString(k), hpackString(v)]))
}

/** A literal with incremental indexing (it enters the dynamic table as index 62). */
export const indexedLiteral = (name: string, value: string) =>
  Buffer.concat([Buffer.from([0x40]), hpackString(name), hpackString(value)])
/** A reference to the dynamic table's newest entry, `times` over (each decodes to the whole header). */
export const repeatNewest = (times: number) => Buffer.alloc(times, 0x80 | 62)

export function frame(type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const h = Buffer.alloc(9)
  h.writeUIntBE(payload.length, 0, 3)
  h[3] = type
  h[4] = flags
  h.writeUInt32BE(stream & 0x7fffffff, 5)
  return Buffer.concat([h, payload])
}

export const rstStream = (stream: number, code = 0x8 /* CANCEL */) => {
  const p = Buffer.alloc(4)
  p.writeUInt32BE(code)
  return frame(FRAME.RST_STREAM, 0, stream, p)
}

export interface RawH2 {
  socket: TLSSocket
  /** Frames received so far, by type (e.g. counts[FRAME.GOAWAY]). */
  counts: Record<number, number>
  /** The error code of the server's GOAWAY, if one came. */
  goaway?: number
  /** Streams the server reset (RST_STREAM), and the HEADERS it answered, by stream id. */
  resets: Set<number>
  answered: Set<number>
  closed: Promise<void>
  isClosed(): boolean
  write(b: Buffer): boolean
  /** Request headers for `path` (pseudo-headers first). */
  request(stream: number, path: string, extra?: Array<[string, string]>, method?: string, endStream?: boolean): Buffer
}

/** Connects, sends the preface and empty SETTINGS, and ACKs the server's SETTINGS. */
export async function rawH2(port: number): Promise<RawH2> {
  const socket = connect({ host: '127.0.0.1', port, ALPNProtocols: ['h2'], rejectUnauthorized: false })
  await new Promise<void>((resolve, reject) => {
    socket.once('secureConnect', () => resolve())
    socket.once('error', reject)
  })
  if (socket.alpnProtocol !== 'h2') throw new Error(`ALPN gave ${socket.alpnProtocol}, not h2`)
  let closedFlag = false
  const closed = new Promise<void>((r) => socket.once('close', () => ((closedFlag = true), r())))
  socket.on('error', () => {})
  const c: RawH2 = {
    socket,
    counts: {},
    resets: new Set(),
    answered: new Set(),
    closed,
    isClosed: () => closedFlag,
    write: (b) => !closedFlag && socket.write(b),
    request: (stream, path, extra = [], method = 'GET', endStream = true) =>
      frame(
        FRAME.HEADERS,
        FLAG.END_HEADERS | (endStream ? FLAG.END_STREAM : 0),
        stream,
        headerBlock([
          [':method', method],
          [':scheme', 'https'],
          [':authority', `127.0.0.1:${port}`],
          [':path', path],
          ...extra,
        ]),
      ),
  }
  let buf = Buffer.alloc(0)
  socket.on('data', (d: Buffer) => {
    buf = Buffer.concat([buf, d])
    while (buf.length >= 9) {
      const len = buf.readUIntBE(0, 3)
      if (buf.length < 9 + len) break
      const type = buf[3]!
      const flags = buf[4]!
      const stream = buf.readUInt32BE(5) & 0x7fffffff
      const payload = buf.subarray(9, 9 + len)
      buf = buf.subarray(9 + len)
      c.counts[type] = (c.counts[type] ?? 0) + 1
      if (type === FRAME.SETTINGS && !(flags & FLAG.ACK)) c.write(frame(FRAME.SETTINGS, FLAG.ACK, 0))
      if (type === FRAME.GOAWAY) c.goaway = payload.readUInt32BE(4)
      if (type === FRAME.RST_STREAM) c.resets.add(stream)
      if (type === FRAME.HEADERS) c.answered.add(stream)
    }
  })
  socket.write(Buffer.concat([PREFACE, frame(FRAME.SETTINGS, 0, 0)]))
  return c
}
