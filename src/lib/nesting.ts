/**
 * Nesting depth of request bodies, measured on the bytes before they are parsed: a body nested
 * thousands of levels deep costs the parser (and anything that walks or serializes the value)
 * far more than its size suggests, so it is refused before any value is built. Both scans stop
 * at the first level too deep; neither validates the syntax (the parser does that afterwards).
 */

const OPEN_ARRAY = 91 // [
const OPEN_OBJECT = 123 // {
const CLOSE_ARRAY = 93 // ]
const CLOSE_OBJECT = 125 // }
const QUOTE = 34 // "
const BACKSLASH = 92 // \

/** How many `[` and `{` the text holds, counting no further than `limit + 1`. */
function openings(text: string, limit: number): number {
  let n = 0
  for (let i = text.indexOf('{'); i !== -1 && n <= limit; i = text.indexOf('{', i + 1)) n++
  for (let i = text.indexOf('['); i !== -1 && n <= limit; i = text.indexOf('[', i + 1)) n++
  return n
}

/** Index of the quote that closes the JSON string opened at `open`, or -1. */
export function closingQuote(text: string, open: number): number {
  for (let q = text.indexOf('"', open + 1); q !== -1; q = text.indexOf('"', q + 1)) {
    let slashes = 0
    while (text.charCodeAt(q - 1 - slashes) === BACKSLASH) slashes++
    if (slashes % 2 === 0) return q
  }
  return -1
}

/**
 * Whether JSON text nests arrays and objects deeper than `max` levels (a top-level object or
 * array is level 1). Brackets inside strings do not count. A text with at most `max` brackets in
 * all is accepted after a few native `indexOf` calls, which is the common case.
 */
export function jsonTooDeep(text: string, max: number): boolean {
  if (openings(text, max) <= max) return false
  let depth = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      i = closingQuote(text, i)
      if (i === -1) return false // unterminated: the parser refuses it
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > max) return true
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--
  }
  return false
}

export type MsgpackProblem = 'too deep' | 'extension' | 'not finite'

/**
 * Bytes before the payload (type byte included) of the types 0xc0-0xdf, with the payload for
 * fixed-size ones; 0 for extensions and the unused 0xc1. Fixext 1 (0xd4) is 3 bytes in all.
 */
// prettier-ignore
const HEADER_BYTES = [
  1, 0, 1, 1, 2, 3, 5, 0, 0, 0, 5, 9, 2, 3, 5, 9, // c0 nil, c1, false, true, bin8/16/32, ext8/16/32, float32/64, uint8-64
  2, 3, 5, 9, 3, 0, 0, 0, 0, 2, 3, 5, 3, 5, 3, 5, // int8-64, fixext1 (3), fixext2-16, str8/16/32, array16/32, map16/32
]

/** Big-endian integers read from the bytes (a DataView would make the engine create the bytes' ArrayBuffer object). */
const u16 = (b: Uint8Array, i: number) => (b[i]! << 8) | b[i + 1]!
const u32 = (b: Uint8Array, i: number) => b[i]! * 0x1000000 + ((b[i + 1]! << 16) | (b[i + 2]! << 8) | b[i + 3]!)

/**
 * Whether msgpack bytes nest arrays and maps deeper than `max` levels, or hold an extension type,
 * or (with `finite`) a float that is NaN or infinite, which JSON cannot hold (a JSON reader would
 * get null). Extensions are refused because a decoder turns them into things that are not JSON
 * data (dates, sets, errors, records, shared or cyclic references); the one allowed is fixext 1
 * of type 0, which the hosted service's clients write for `undefined`. Truncated or invalid bytes
 * are left to the decoder to refuse.
 */
export function msgpackProblem(b: Uint8Array, max: number, finite = false): MsgpackProblem | undefined {
  /** Values still to read in each enclosing container (innermost last). */
  const open: number[] = []
  let left = 1 // values still to read at the current level; the top level is one value
  let i = 0
  while (i < b.length) {
    const t = b[i]!
    let items = -1 // > -1: a container header with that many values (a map's pairs count twice)
    let size = 1 // bytes of this value, or of its header when it is a container
    if (t <= 0x7f || t >= 0xe0 || t === 0xc0 || t === 0xc2 || t === 0xc3) size = 1
    else if (t <= 0x8f) items = (t & 0x0f) * 2
    else if (t <= 0x9f) items = t & 0x0f
    else if (t <= 0xbf) size = 1 + (t & 0x1f)
    else {
      const header = HEADER_BYTES[t - 0xc0]!
      if (header === 0) return t === 0xc1 ? undefined : 'extension' // 0xc1 is never used
      if (i + header > b.length) return undefined
      size = header
      switch (t) {
        case 0xc4: // bin 8
        case 0xd9: // str 8
          size += b[i + 1]!
          break
        case 0xc5: // bin 16
        case 0xda: // str 16
          size += u16(b, i + 1)
          break
        case 0xc6: // bin 32
        case 0xdb: // str 32
          size += u32(b, i + 1)
          break
        case 0xd4: // fixext 1: only type 0 (undefined)
          if (b[i + 1] !== 0) return 'extension'
          break
        case 0xca: // float 32: exponent all ones is NaN or infinite
          if (finite && (b[i + 1]! & 0x7f) === 0x7f && (b[i + 2]! & 0x80) === 0x80) return 'not finite'
          break
        case 0xcb: // float 64: the same
          if (finite && (b[i + 1]! & 0x7f) === 0x7f && (b[i + 2]! & 0xf0) === 0xf0) return 'not finite'
          break
        case 0xdc: // array 16
          items = u16(b, i + 1)
          break
        case 0xdd: // array 32
          items = u32(b, i + 1)
          break
        case 0xde: // map 16
          items = u16(b, i + 1) * 2
          break
        case 0xdf: // map 32
          items = u32(b, i + 1) * 2
          break
      }
    }
    i += size
    if (items >= 0 && open.length >= max) return 'too deep' // this container would be level max + 1
    if (items > 0) {
      open.push(left - 1)
      left = items
      continue
    }
    // a scalar or an empty container: one value of this level done, and of every level it completes
    left--
    while (left === 0 && open.length) left = open.pop()!
    if (left === 0) return undefined
  }
  return undefined
}
