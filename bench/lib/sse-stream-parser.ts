/**
 * Incremental reader of one event-stream response for the benchmark subscribers, written for
 * throughput: it frames the HTTP head and chunked encoding, then finds `event: message` records
 * with native `indexOf` and reads only the leading numbers of the message's `data` string,
 * `<publisher>.<seq>[.<stamp>]` (see sequence-payload.ts). Nothing is decoded or allocated per
 * message; bytes are copied only when a record is split across reads.
 */
import { readSequence, type SequenceNumbers } from './sequence-payload'

const CRLFCRLF = Buffer.from('\r\n\r\n')
const MARK = Buffer.from('event: message\ndata: ')
const DATA = Buffer.from('"data":"')
const ERROR = Buffer.from('event: error\ndata: ')
/** A record longer than this without its data numbers is not one of ours. */
const MAX_CARRY = 64 * 1024

const enum State {
  Head,
  ChunkSize,
  ChunkData,
  ChunkEnd,
  Identity,
  Ended,
}

export interface SseSink {
  /** One `message` record of subscriber `sub` (stamp is 0 when the data has none). */
  message(sub: number, publisher: number, seq: number, stamp: number): void
}

export class SseStreamParser {
  /** HTTP status of the response; 0 until the head is complete. */
  status = 0
  /** `message` records seen. */
  messages = 0
  /** Bytes of the response body received so far. */
  bodyBytes = 0
  /** The head, and for a non-200 response the start of its body (for error reports). */
  headText = ''
  /** The last socket read, to explain a stream the server ended (e.g. the slow-consumer error record). */
  last: Buffer | null = null
  private state = State.Head
  private carry: Buffer | null = null
  private chunkLeft = 0
  private chunkSize = 0
  private sizeDigits = true
  private readonly numbers: SequenceNumbers = { publisher: 0, seq: -1, stamp: 0 }

  constructor(
    readonly index: number,
    private readonly sink: SseSink,
  ) {}

  /** True once the server ended the response body (terminating chunk) or it was not a 200. */
  get ended(): boolean {
    return this.state === State.Ended
  }

  /** Consumes one read of the socket; throws on bytes it cannot frame. */
  feed(data: Buffer): void {
    this.last = data
    let pos = 0
    const len = data.length
    if (this.state === State.Head) {
      if (this.carry) {
        data = Buffer.concat([this.carry, data])
        this.carry = null
      }
      const end = data.indexOf(CRLFCRLF)
      if (end < 0) {
        if (data.length > MAX_CARRY) throw new Error('response head too long')
        this.carry = Buffer.from(data)
        return
      }
      this.head(data, end)
      pos = end + 4
      if (this.status !== 200) {
        this.headText += data.toString('latin1', pos, Math.min(data.length, pos + 300))
        this.state = State.Ended
        return
      }
      return this.body(data, pos, data.length)
    }
    this.body(data, pos, len)
  }

  /** The `data` of the last `event: error` record in the last read, if any. */
  lastError(): string | undefined {
    const buf = this.last
    const at = buf ? buf.lastIndexOf(ERROR) : -1
    if (!buf || at < 0) return undefined
    const eol = buf.indexOf(10, at + ERROR.length)
    return buf.toString('utf8', at + ERROR.length, eol < 0 ? buf.length : eol)
  }

  private head(data: Buffer, end: number): void {
    this.headText = data.toString('latin1', 0, end)
    if (!/^HTTP\/1\.[01] \d\d\d/.test(this.headText))
      throw new Error(`not an HTTP/1.x response: ${JSON.stringify(this.headText.slice(0, 40))}`)
    this.status = Number(this.headText.slice(9, 12))
    this.state = /\r\ntransfer-encoding:[^\r]*chunked/i.test(this.headText) ? State.ChunkSize : State.Identity
  }

  private body(data: Buffer, pos: number, len: number): void {
    this.bodyBytes += len - pos
    while (pos < len) {
      switch (this.state) {
        case State.Identity:
          this.scan(data, pos, len)
          return
        case State.ChunkSize: {
          const c = data[pos++]!
          if (c === 10) {
            if (this.chunkSize === 0) {
              this.state = State.Ended
              return
            }
            this.state = State.ChunkData
            this.chunkLeft = this.chunkSize
            this.chunkSize = 0
            this.sizeDigits = true
          } else if (this.sizeDigits && c !== 13) {
            const lower = c | 0x20
            const d = c >= 48 && c <= 57 ? c - 48 : lower >= 97 && lower <= 102 ? lower - 87 : -1
            if (d >= 0) this.chunkSize = this.chunkSize * 16 + d
            else if (c === 59 || c === 32 || c === 9)
              this.sizeDigits = false // chunk extension: ignored
            else throw new Error(`bad chunk size byte ${c}`)
          }
          break
        }
        case State.ChunkData: {
          const take = Math.min(this.chunkLeft, len - pos)
          this.scan(data, pos, pos + take)
          pos += take
          this.chunkLeft -= take
          if (this.chunkLeft === 0) this.state = State.ChunkEnd
          break
        }
        case State.ChunkEnd:
          if (data[pos++] === 10) this.state = State.ChunkSize
          break
        case State.Ended:
          return
      }
    }
  }

  /** SSE bytes data[pos, end): counts `message` records and hands on their numbers. */
  private scan(data: Buffer, pos: number, end: number): void {
    if (this.carry) {
      data = Buffer.concat([this.carry, data.subarray(pos, end)])
      pos = 0
      end = data.length
      this.carry = null
    }
    for (;;) {
      const m = data.indexOf(MARK, pos)
      if (m < 0 || m + MARK.length > end) return this.keepPartialMark(data, pos, end)
      let i = data.indexOf(DATA, m + MARK.length)
      if (i < 0 || i + DATA.length >= end) return this.keep(data, m, end)
      i += DATA.length
      i = readSequence(data, i, end, this.numbers)
      if (i < 0) return this.keep(data, m, end)
      this.messages++
      const n = this.numbers
      this.sink.message(this.index, n.publisher, n.seq, n.stamp) // seq -1: data without our numbers
      pos = i
    }
  }

  private keep(data: Buffer, from: number, end: number): void {
    if (end - from > MAX_CARRY)
      throw new Error(`event-stream record longer than ${MAX_CARRY} bytes without "data" numbers`)
    this.carry = Buffer.from(data.subarray(from, end)) // copy: the read buffer is not ours to keep
  }

  /** Keeps the end of data[pos, end) only if it may be the start of a split `event: message` line. */
  private keepPartialMark(data: Buffer, pos: number, end: number): void {
    outer: for (let k = Math.max(pos, end - MARK.length + 1); k < end; k++) {
      if (data[k] !== MARK[0]) continue
      for (let j = 1; k + j < end; j++) if (data[k + j] !== MARK[j]) continue outer
      this.carry = Buffer.from(data.subarray(k, end))
      return
    }
  }
}
