/** A RESP2 error reply (`-ERR ...`, `-MOVED ...`): its text. */
export class RespError {
  constructor(readonly message: string) {}
}

/**
 * A RESP2 value as the reader gives it: a bulk string as a Buffer (a view of the bytes read, no
 * copy), a simple string as a string, an integer as a number, an error, an array, or null.
 */
export type RespValue = Buffer | string | number | RespError | null | RespValue[]

/** What `parseAt` found: the value, and where the next one starts (-1: the input ends inside it). */
let found: RespValue = null
/** When `parseAt` ran out of input: how many bytes (from the value's start) it needs at least. */
let wanted = 0

const CR = 13
const NEEDED = -1

/** The integer of a header line `buf[from..to)` (digits, an optional minus). */
function lineInt(buf: Buffer, from: number, to: number): number {
  let i = from
  const negative = buf[i] === 45
  if (negative) i++
  let n = 0
  for (; i < to; i++) n = n * 10 + (buf[i]! - 48)
  return negative ? -n : n
}

/** The CR ending the header line that starts at `from` (-1: not in `buf`): a few bytes, read in JS (no native call). */
function lineEnd(buf: Buffer, from: number): number {
  for (let i = from; i < buf.length; i++) if (buf[i] === CR) return i
  return -1
}

/** Parses the value starting at `i`: its end, or NEEDED when the input stops inside it. */
function parseAt(buf: Buffer, i: number): number {
  const end = lineEnd(buf, i + 1)
  if (end < 0 || end + 1 >= buf.length) return partial(buf)
  const type = buf[i]
  const next = end + 2
  switch (type) {
    case 36: {
      // $<length>\r\n<bytes>\r\n
      const len = lineInt(buf, i + 1, end)
      if (len < 0) {
        found = null
        return next
      }
      if (buf.length < next + len + 2) return partial(buf, next + len + 2)
      found = buf.subarray(next, next + len)
      return next + len + 2
    }
    case 42: {
      // *<count>\r\n and as many values
      const count = lineInt(buf, i + 1, end)
      if (count < 0) {
        found = null
        return next
      }
      const items: RespValue[] = []
      let at = next
      for (let k = 0; k < count; k++) {
        if (at >= buf.length) return partial(buf, at + 1)
        at = parseAt(buf, at)
        if (at === NEEDED) return NEEDED
        items.push(found)
      }
      found = items
      return at
    }
    case 58:
      found = lineInt(buf, i + 1, end)
      return next
    case 43:
      found = buf.toString('utf8', i + 1, end)
      return next
    case 45:
      found = new RespError(buf.toString('utf8', i + 1, end))
      return next
    default:
      throw new Error(`Unexpected RESP type byte ${type} from Redis`)
  }
}

/** `*3\r\n$8\r\nsmessage\r\n$`: how a sharded channel's message starts. */
const SMESSAGE = Buffer.from('*3\r\n$8\r\nsmessage\r\n$')
/** Not a sharded message (read as any value). */
const OTHER = 0

/**
 * A sharded message at `i` read without making values: `onSMessage` is given the channel's bytes
 * (`buf[from..to)`) and the payload. Its end, NEEDED when the input stops inside it, or OTHER.
 */
function smessageAt(buf: Buffer, i: number, onSMessage: SMessageHandler): number {
  const n = SMESSAGE.length
  // fewer bytes than its start: left to `parseAt`, which waits for the rest as for any value
  if (buf.length - i < n) return OTHER
  for (let k = 0; k < n; k++) if (buf[i + k] !== SMESSAGE[k]) return OTHER
  let at = i + n
  const chEnd = lineEnd(buf, at)
  if (chEnd < 0) return partial(buf)
  const from = chEnd + 2
  const to = from + lineInt(buf, at, chEnd)
  if (buf.length < to + 3) return partial(buf, to + 3)
  at = to + 3 // CR LF '$'
  const lenEnd = lineEnd(buf, at)
  if (lenEnd < 0 || lenEnd + 1 >= buf.length) return partial(buf)
  const p = lenEnd + 2
  const end = p + lineInt(buf, at, lenEnd)
  if (buf.length < end + 2) return partial(buf, end + 2)
  onSMessage(buf, from, to, buf.subarray(p, end))
  return end + 2
}

/** A value cut short: NEEDED, noting the bytes it needs at least (an end in `buf`). */
function partial(buf: Buffer, atLeast = buf.length + 1): number {
  wanted = atLeast
  return NEEDED
}

/** A sharded message: its channel as bytes `buf[from..to)`, and its payload (a view of the bytes read). */
export type SMessageHandler = (buf: Buffer, from: number, to: number, payload: Buffer) => void

/**
 * Reads RESP2 values from a byte stream as it arrives in chunks: each whole value is handed to
 * `onValue` in order (a sharded message to `onSMessage` instead, when given, without making its
 * values: the notifications of every publish come this way). A value cut by a chunk's end is read again, whole, once at least the bytes
 * it was found to need have come (its chunks are kept apart until then: a large value arriving in
 * many chunks is joined once, not once per chunk). A bulk string is a view of the bytes read.
 */
export class RespReader {
  /** The start of a value cut short, and the chunks after it. */
  private parts: Buffer[] = []
  private have = 0
  /** Bytes the value cut short needs at least before it is read again. */
  private want = 0

  constructor(
    private readonly onValue: (v: RespValue) => void,
    private readonly onSMessage?: SMessageHandler,
  ) {}

  feed(chunk: Buffer): void {
    let buf = chunk
    if (this.parts.length) {
      this.parts.push(chunk)
      this.have += chunk.length
      if (this.have < this.want) return
      buf = Buffer.concat(this.parts, this.have)
      this.parts = []
    }
    let i = 0
    const onSMessage = this.onSMessage
    while (i < buf.length) {
      if (onSMessage) {
        const next = smessageAt(buf, i, onSMessage)
        if (next === NEEDED) break
        if (next !== OTHER) {
          i = next
          continue
        }
      }
      const next = parseAt(buf, i)
      if (next === NEEDED) break
      i = next
      const v = found
      found = null
      this.onValue(v)
    }
    if (i < buf.length) {
      const rest = buf.subarray(i)
      this.parts = [rest]
      this.have = rest.length
      this.want = wanted - i
    }
  }

  /** Forgets a value cut short (the connection it came on is gone). */
  reset(): void {
    this.parts = []
    this.have = 0
  }
}
