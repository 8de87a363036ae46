/**
 * Incremental HTTP/1.1 response parser for the load generator: it only frames responses (so
 * pipelined responses are counted exactly, however TCP splits or coalesces them) and reports each
 * status code. Bodies are skipped by Content-Length or chunked framing, never decoded.
 * Anything it cannot frame (close-delimited bodies, garbage) throws: a benchmark must not guess.
 */
const CRLF = Buffer.from('\r\n')
const CRLFCRLF = Buffer.from('\r\n\r\n')
const MAX_HEAD = 64 * 1024

const enum State {
  Head,
  Body,
  ChunkSize,
  ChunkData,
  Trailer,
}

export class ResponseParser {
  private state = State.Head
  /** Unconsumed bytes of an incomplete head, chunk-size or trailer line. */
  private carry: Buffer | null = null
  /** Body or chunk bytes (chunk data includes its trailing CRLF) still to skip. */
  private remaining = 0
  private status = 0

  constructor(private readonly onResponse: (status: number) => void) {}

  /** True between responses: no partial response is buffered. */
  get idle(): boolean {
    return this.state === State.Head && this.carry === null
  }

  /** Consumes one chunk of the byte stream; returns how many responses it completed. */
  feed(chunk: Uint8Array): number {
    let data = chunk instanceof Buffer ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    if (this.carry) {
      data = Buffer.concat([this.carry, data])
      this.carry = null
    }
    const len = data.length
    let pos = 0
    let done = 0
    while (pos < len) {
      switch (this.state) {
        case State.Head: {
          const end = data.indexOf(CRLFCRLF, pos)
          if (end < 0) return this.keep(data, pos, done)
          if (this.parseHead(data, pos, end)) {
            done++
            this.onResponse(this.status)
          }
          pos = end + 4
          break
        }
        case State.Body:
        case State.ChunkData: {
          const take = Math.min(this.remaining, len - pos)
          pos += take
          this.remaining -= take
          if (this.remaining > 0) break
          if (this.state === State.Body) {
            done++
            this.complete()
          } else this.state = State.ChunkSize
          break
        }
        case State.ChunkSize: {
          const eol = data.indexOf(CRLF, pos)
          if (eol < 0) return this.keep(data, pos, done)
          const size = parseInt(data.toString('latin1', pos, eol).split(';')[0]!.trim(), 16)
          if (!Number.isInteger(size) || size < 0)
            throw new Error(`bad chunk size line ${JSON.stringify(data.toString('latin1', pos, eol))}`)
          pos = eol + 2
          if (size === 0) this.state = State.Trailer
          else {
            this.state = State.ChunkData
            this.remaining = size + 2
          }
          break
        }
        case State.Trailer: {
          const eol = data.indexOf(CRLF, pos)
          if (eol < 0) return this.keep(data, pos, done)
          if (eol === pos) {
            done++
            this.complete()
          }
          pos = eol + 2
          break
        }
      }
    }
    return done
  }

  private keep(data: Buffer, pos: number, done: number): number {
    if (data.length - pos > MAX_HEAD) throw new Error(`response head or chunk line longer than ${MAX_HEAD} bytes`)
    this.carry = Buffer.from(data.subarray(pos)) // copy: the socket may reuse its buffer
    return done
  }

  private complete(): void {
    this.state = State.Head
    this.onResponse(this.status)
  }

  /** Parses the head in data[start, end); returns true when the response has no body (complete). */
  private parseHead(data: Buffer, start: number, end: number): boolean {
    if (end - start < 12 || !startsWith(data, start, 'http/1.')) {
      throw new Error(
        `not an HTTP/1.x response: ${JSON.stringify(data.toString('latin1', start, Math.min(end, start + 40)))}`,
      )
    }
    const status = (data[start + 9]! - 48) * 100 + (data[start + 10]! - 48) * 10 + (data[start + 11]! - 48)
    if (!(status >= 100 && status <= 599))
      throw new Error(`bad status line ${JSON.stringify(data.toString('latin1', start, end).split('\r\n')[0])}`)
    this.status = status
    let contentLength = -1
    let chunked = false
    let line = data.indexOf(CRLF, start) + 2
    while (line < end) {
      let eol = data.indexOf(CRLF, line)
      if (eol < 0 || eol > end) eol = end
      if (startsWith(data, line, 'content-length:')) {
        contentLength = parseDecimal(data, line + 15, eol)
      } else if (startsWith(data, line, 'transfer-encoding:')) {
        chunked = data
          .toString('latin1', line + 18, eol)
          .toLowerCase()
          .includes('chunked')
      }
      line = eol + 2
    }
    if (status < 200) {
      if (status === 101) throw new Error('unexpected 101 Switching Protocols')
      return false // interim response (100 Continue, 103 Early Hints): the final one follows
    }
    if (status === 204 || status === 304) return true
    if (chunked) {
      this.state = State.ChunkSize
      return false
    }
    if (contentLength < 0) throw new Error(`status ${status} response without Content-Length or chunked encoding`)
    if (contentLength === 0) return true
    this.state = State.Body
    this.remaining = contentLength
    return false
  }
}

/** Case-insensitive prefix match of lower-case ASCII `s` at data[at]. */
function startsWith(data: Buffer, at: number, s: string): boolean {
  if (at + s.length > data.length) return false
  for (let i = 0; i < s.length; i++) if ((data[at + i]! | 0x20) !== s.charCodeAt(i)) return false
  return true
}

/** Digits of data[from, to), optional spaces/tabs around them; throws on anything else. */
function parseDecimal(data: Buffer, from: number, to: number): number {
  while (from < to && (data[from] === 32 || data[from] === 9)) from++
  while (to > from && (data[to - 1] === 32 || data[to - 1] === 9)) to--
  let n = 0
  for (let i = from; i < to; i++) {
    const d = data[i]! - 48
    if (d < 0 || d > 9) break
    n = n * 10 + d
    if (i === to - 1) return n
  }
  throw new Error(`bad Content-Length ${JSON.stringify(data.toString('latin1', from, to))}`)
}
