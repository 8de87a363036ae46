/**
 * The msgpack form of an ACK, written by hand: `{ action, msgSerial, count, res: [{ serials }] }`,
 * the frame a publishing connection is sent most (one per connection and event-loop turn), in
 * the key order and types msgpackr gives it (which any msgpack decoder reads alike). Written into
 * a shared chunk, each frame after the last: a frame stays valid however long it is held (a new
 * chunk is taken when one is full), as msgpackr's are. About half msgpackr's time for it
 * (`bench/ack-encode.ts`), which walks the object generically.
 */

import { writeAscii } from '../../lib/encoding'

/** An ACK as the core sends it (core/connections/acks.ts). */
export interface AckMessage {
  action: number
  msgSerial: number
  count: number
  res: Array<{ serials?: Array<string | null> }>
}

const CHUNK = 16 * 1024
/** Worst case bytes of a string of `n` UTF-16 units in UTF-8, with its header. */
const strBound = (n: number) => 5 + 3 * n
/**
 * Most bytes of the fixed part: the map's header, the four keys (27), three numbers of at most 9
 * and the array header of `res` (at most 5).
 */
const HEAD_BOUND = 1 + 27 + 3 * 9 + 5
/** Bytes of one entry of `res` before its serials: its map's header, the `serials` key (8), and its array header (1, 3 or 5). */
const entryHead = (n: number) => 9 + (n < 16 ? 1 : n < 0x10000 ? 3 : 5)

let chunk = new Uint8Array(CHUNK)
let view = new DataView(chunk.buffer)
let pos = 0
const encoder = new TextEncoder()

/** The ACK's msgpack bytes; undefined when its shape is not the plain one (then msgpackr packs it). */
export function packAck(ack: AckMessage): Uint8Array | undefined {
  const { res } = ack
  // bytes it can take at most (every write below must fit: one past the chunk's end is lost
  // without a word, and the frame with it): the fixed part, then each entry with its serials
  let bound = HEAD_BOUND
  for (const r of res) {
    const s = r.serials
    if (!s) return undefined
    bound += entryHead(s.length)
    for (const x of s) bound += x === null ? 1 : strBound(x.length)
  }
  if (bound > CHUNK) return undefined
  if (pos + bound > CHUNK) {
    chunk = new Uint8Array(CHUNK)
    view = new DataView(chunk.buffer)
    pos = 0
  }
  const start = pos
  const p = write(ack, start)
  if (p > CHUNK) {
    // the bound fell short (a shape it does not count right): the frame is not whole; msgpackr packs it
    pos = CHUNK
    return undefined
  }
  pos = p
  return chunk.subarray(start, p)
}

/** Writes the ACK into the chunk from `p`; returns where it ends. */
function write(ack: AckMessage, p: number): number {
  const { res } = ack
  chunk[p++] = 0x84 // a map of 4
  p = key(p, ACTION)
  p = uint(p, ack.action)
  p = key(p, MSG_SERIAL)
  p = uint(p, ack.msgSerial)
  p = key(p, COUNT)
  p = uint(p, ack.count)
  p = key(p, RES)
  p = arrayHeader(p, res.length)
  for (const r of res) {
    const s = r.serials!
    chunk[p++] = 0x81 // a map of 1
    p = key(p, SERIALS)
    p = arrayHeader(p, s.length)
    for (const x of s) p = x === null ? ((chunk[p] = 0xc0), p + 1) : str(p, x)
  }
  return p
}

const bytesOf = (s: string) => {
  const b = encoder.encode(s)
  const out = new Uint8Array(1 + b.length)
  out[0] = 0xa0 | b.length
  out.set(b, 1)
  return out
}
const ACTION = bytesOf('action')
const MSG_SERIAL = bytesOf('msgSerial')
const COUNT = bytesOf('count')
const RES = bytesOf('res')
const SERIALS = bytesOf('serials')

/** A key's bytes (a byte loop: cheaper than a native `set` for a few bytes). */
function key(p: number, k: Uint8Array): number {
  const n = k.length
  for (let i = 0; i < n; i++) chunk[p + i] = k[i]!
  return p + n
}

/** A non-negative number as msgpackr writes it: the smallest unsigned integer up to 32 bits, else a float64. */
function uint(p: number, n: number): number {
  if (n >= 0 && n < 0x80 && Number.isInteger(n)) {
    chunk[p] = n
    return p + 1
  }
  if (n >>> 0 !== n) {
    chunk[p] = 0xcb
    view.setFloat64(p + 1, n)
    return p + 9
  }
  if (n < 0x100) {
    chunk[p] = 0xcc
    chunk[p + 1] = n
    return p + 2
  }
  return wide(p, n, 0xcd, 0xce)
}

function arrayHeader(p: number, n: number): number {
  if (n >= 16) return wide(p, n, 0xdc, 0xdd)
  chunk[p] = 0x90 | n
  return p + 1
}

/** A type byte and a 16-bit number (`t16`) or, from 65,536, a 32-bit one (`t32`). */
function wide(p: number, n: number, t16: number, t32: number): number {
  // byte by byte (big-endian), as every write past the fixed part: one past the chunk's end is
  // dropped, where a DataView's would throw, so that packAck sees it and leaves the ACK to msgpackr
  if (n < 0x10000) {
    chunk[p] = t16
    chunk[p + 1] = n >>> 8
    chunk[p + 2] = n & 0xff
    return p + 3
  }
  chunk[p] = t32
  chunk[p + 1] = n >>> 24
  chunk[p + 2] = (n >>> 16) & 0xff
  chunk[p + 3] = (n >>> 8) & 0xff
  chunk[p + 4] = n & 0xff
  return p + 5
}

/** A string: ASCII copied by code unit; anything else through the encoder. */
function str(p: number, s: string): number {
  const n = s.length
  if (n < 32 && writeAscii(chunk, p + 1, s)) {
    chunk[p] = 0xa0 | n
    return p + 1 + n
  }
  // room for the longest header; the bytes moved back when a shorter one serves
  const { read, written } = encoder.encodeInto(s, chunk.subarray(p + 5))
  // cut at the chunk's end: a whole but shorter string would read back as another serial, so the
  // frame is marked as past the end (packAck leaves it to msgpackr)
  if (read < n) return CHUNK + 1
  let h: number
  if (written < 32) {
    chunk[p] = 0xa0 | written
    h = 1
  } else if (written < 0x100) {
    chunk[p] = 0xd9
    chunk[p + 1] = written
    h = 2
  } else h = wide(p, written, 0xda, 0xdb) - p
  if (h < 5) chunk.copyWithin(p + h, p + 5, p + 5 + written)
  return p + h + written
}
