/**
 * msgpack bytes as plain data (request bodies, realtime frames), read and checked in one pass
 * by a reader of our own: maps as objects (keys as strings, as msgpackr's `mapsAsObjects` makes
 * them), arrays, strings, numbers (64-bit integers as numbers: a BigInt cannot be serialized),
 * nil and booleans, binary values as Uint8Arrays of their own (copied out of the caller's
 * bytes). Refused: nesting deeper than the caller's bound, extension types (a decoder would turn
 * them into things that are not JSON data: dates, sets, errors, records, shared or cyclic
 * references; the one allowed is fixext 1 of type 0, which the hosted service's clients write
 * for `undefined`), with `finite` a NaN or infinite float (JSON cannot hold it), and anything
 * that is not exactly one msgpack value.
 *
 * Why not msgpackr: it needs the bound checked in a pass of its own first, and it reads the
 * strings of any source of 140 bytes or more (a realtime MESSAGE with a 100-byte payload) through
 * its native extractor, one N-API call per decode, which costs Bun more than the strings
 * themselves; here strings are read by Bun's own `utf8Slice`, and short ones (map keys, channel
 * and message names) come from a small cache of the strings last read, as msgpackr does for
 * keys. A realtime MESSAGE with a 100-byte payload is checked and decoded in about a third of the
 * time it took (`bench/msgpack-decode.ts`). Packing stays msgpackr's.
 */

import { utf8Slice } from './encoding'

/** Why bytes are not plain msgpack (what `plainMsgpack` answers instead of a value). */
export type MsgpackProblem = 'too deep' | 'extension' | 'not finite' | 'malformed'

export class NotPlainMsgpack {
  constructor(readonly problem: MsgpackProblem) {}
}

/** The answers, one of each; the reader throws them (no Error made: no stack captured). */
const NOT_PLAIN = {
  'too deep': new NotPlainMsgpack('too deep'),
  extension: new NotPlainMsgpack('extension'),
  'not finite': new NotPlainMsgpack('not finite'),
  malformed: new NotPlainMsgpack('malformed'),
} satisfies Record<MsgpackProblem, NotPlainMsgpack>

// the reader's state for one decode (a decode never waits, so one set serves every caller)
let src: Uint8Array = new Uint8Array(0)
let pos = 0
let end = 0
let maxDepth = 0
let finiteOnly = false

/**
 * msgpack bytes as plain data, or why not (a NotPlainMsgpack, which no decoded value can be).
 * The value is answered bare: no wrapper object per frame. The caller's bytes are not written
 * to nor kept.
 */
export function plainMsgpack(bytes: Uint8Array, depth: number, finite = false): unknown {
  src = bytes
  pos = 0
  end = bytes.length
  maxDepth = depth
  finiteOnly = finite
  try {
    const value = read(0)
    return pos === end ? value : NOT_PLAIN.malformed
  } catch (e) {
    if (e instanceof NotPlainMsgpack) return e
    throw e
  } finally {
    src = EMPTY
  }
}
const EMPTY: Uint8Array = new Uint8Array(0)

/** A value at nesting `depth` (the number of containers around it). */
function read(depth: number): unknown {
  if (pos >= end) throw NOT_PLAIN.malformed
  const t = src[pos++]!
  if (t < 0x80) return t
  if (t < 0x90) return map(t & 0x0f, depth)
  if (t < 0xa0) return array(t & 0x0f, depth)
  if (t < 0xc0) return str(t & 0x1f)
  if (t >= 0xe0) return t - 0x100
  switch (t) {
    case 0xc0:
      return null
    case 0xc2:
      return false
    case 0xc3:
      return true
    case 0xc4:
      return bin(uint(1))
    case 0xc5:
      return bin(uint(2))
    case 0xc6:
      return bin(uint(4))
    case 0xca:
      return float(4)
    case 0xcb:
      return float(8)
    case 0xcc:
      return uint(1)
    case 0xcd:
      return uint(2)
    case 0xce:
      return uint(4)
    case 0xcf:
      return uint(4) * 0x1_0000_0000 + uint(4)
    case 0xd0:
      return (uint(1) << 24) >> 24
    case 0xd1:
      return (uint(2) << 16) >> 16
    case 0xd2:
      return uint(4) | 0
    case 0xd3:
      return (uint(4) | 0) * 0x1_0000_0000 + uint(4)
    case 0xd4: // fixext 1: only type 0, undefined
      if (pos + 2 > end) throw NOT_PLAIN.malformed
      if (src[pos] !== 0) throw NOT_PLAIN.extension
      pos += 2
      return undefined
    case 0xd9:
      return str(uint(1))
    case 0xda:
      return str(uint(2))
    case 0xdb:
      return str(uint(4))
    case 0xdc:
      return array(uint(2), depth)
    case 0xdd:
      return array(uint(4), depth)
    case 0xde:
      return map(uint(2), depth)
    case 0xdf:
      return map(uint(4), depth)
    case 0xc1: // never used
      throw NOT_PLAIN.malformed
    default: // ext 8/16/32, fixext 2-16
      throw NOT_PLAIN.extension
  }
}

/** A big-endian unsigned integer of `n` bytes (1, 2 or 4). */
function uint(n: number): number {
  if (pos + n > end) throw NOT_PLAIN.malformed
  const p = pos
  pos += n
  if (n === 1) return src[p]!
  if (n === 2) return (src[p]! << 8) | src[p + 1]!
  return src[p]! * 0x100_0000 + ((src[p + 1]! << 16) | (src[p + 2]! << 8) | src[p + 3]!)
}

// floats read through a small buffer of their own (no DataView over the caller's bytes)
const floatBytes = new Uint8Array(8)
const float32 = new Float32Array(floatBytes.buffer)
const float64 = new Float64Array(floatBytes.buffer)
const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1

function float(n: 4 | 8): number {
  if (pos + n > end) throw NOT_PLAIN.malformed
  for (let i = 0; i < n; i++) floatBytes[LITTLE_ENDIAN ? n - 1 - i : i] = src[pos + i]!
  pos += n
  const v = n === 4 ? float32[0]! : float64[0]!
  if (finiteOnly && !Number.isFinite(v)) throw NOT_PLAIN['not finite']
  return v
}

function bin(n: number): Uint8Array {
  if (pos + n > end) throw NOT_PLAIN.malformed
  const out = new Uint8Array(n)
  out.set(src.subarray(pos, pos + n))
  pos += n
  return out
}

const fromCharCode = String.fromCharCode

/**
 * A string of `n` bytes. Short ones (channel names, message names, client ids, encodings: what
 * frames repeat) come from a cache of the strings last read under the same hash of their bytes,
 * so that a repeated one is not made again (a string made by concatenation costs one heap object
 * per character); the others, and a short one not cached, are read by Bun's UTF-8 decoder
 * (invalid bytes as U+FFFD), those under 8 bytes that are ASCII in JavaScript.
 */
function str(n: number): string {
  if (pos + n > end) throw NOT_PLAIN.malformed
  const p = pos
  pos += n
  if (n === 0) return ''
  if (n > MAX_CACHED) return utf8Slice(src, p, p + n)
  // the slot by the length and the first, middle and last two bytes (names differ most at their
  // ends: `room-12`; a 1-byte string's "byte before" is its header, the same for all of them)
  const slot =
    ((n << 7) ^ (src[p]! << 4) ^ (src[p + (n >> 1)]! << 2) ^ (src[p + n - 2]! * 37) ^ src[p + n - 1]!) & (SLOTS - 1)
  const cached = cache[slot]
  if (cached !== undefined && cached.length === n) {
    let i = 0
    while (i < n && src[p + i] === cached.charCodeAt(i)) i++
    if (i === n) return cached
  }
  const s = n < 8 ? shortText(p, n) : utf8Slice(src, p, p + n)
  // only ASCII strings are kept: their bytes are their code units (the comparison above)
  if (s.length === n) cache[slot] = s
  return s
}
const MAX_CACHED = 24
const SLOTS = 4096
const cache: Array<string | undefined> = new Array(SLOTS)

/**
 * `n` (< 8) bytes from `p`: ASCII in JavaScript (a native call costs more), else Bun's decoder.
 * What lib/encoding's `utf8Text` does, kept here: called with the reader's bytes alone, it stays
 * monomorphic (through `utf8Text`, which the rings call with their buffers, a decode took 1-14%
 * longer in a loop).
 */
function shortText(p: number, n: number): string {
  let s = ''
  for (let i = p; i < p + n; i++) {
    const c = src[i]!
    if (c > 0x7f) return utf8Slice(src, p, p + n)
    s += fromCharCode(c)
  }
  return s
}

function array(n: number, depth: number): unknown[] {
  if (depth >= maxDepth) throw NOT_PLAIN['too deep']
  // every element takes a byte at least: a length beyond the bytes is refused before any allocation
  if (n > end - pos) throw NOT_PLAIN.malformed
  const out = new Array(n)
  for (let i = 0; i < n; i++) out[i] = read(depth + 1)
  return out
}

function map(n: number, depth: number): Record<string, unknown> {
  if (depth >= maxDepth) throw NOT_PLAIN['too deep']
  if (n * 2 > end - pos) throw NOT_PLAIN.malformed
  const out: Record<string, unknown> = {}
  for (let i = 0; i < n; i++) {
    let k = key(depth)
    // a key that would set the object's prototype is kept as msgpackr keeps it
    if (k === '__proto__') k = '__proto_'
    out[k] = read(depth + 1)
  }
  return out
}

/**
 * A map's key as a string (short ones from the strings' cache: protocol messages repeat a few
 * dozen keys); a number, boolean or nil key as its text (as msgpackr reads them); any other key
 * is refused.
 */
function key(depth: number): string {
  const k = read(depth + 1)
  if (typeof k === 'string') return k
  if (typeof k === 'number' || typeof k === 'boolean' || k === null || k === undefined) return String(k)
  throw NOT_PLAIN.malformed
}
