/** Small, dependency-free encoding helpers. */
const enc = new TextEncoder()
const dec = new TextDecoder()

export const utf8Encode = (s: string): Uint8Array => enc.encode(s)
export const utf8Decode = (b: Uint8Array): string => dec.decode(b)
/** UTF-8 bytes of `s`: Buffer.byteLength's default encoding (naming it, 'utf8', costs a lookup: ~17 ns a call against ~7). */
export const utf8Length = (s: string): number => Buffer.byteLength(s)

export const toBase64 = (b: Uint8Array): string => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64')
export const fromBase64 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'base64'))
export const base64url = (s: string | Uint8Array): string =>
  (typeof s === 'string' ? Buffer.from(s, 'utf8') : Buffer.from(s)).toString('base64url')
export const fromBase64url = (s: string): string => Buffer.from(s, 'base64url').toString('utf8')

/** Bun's (and Node's) Buffer methods that read a range of any Uint8Array as text, with no view made. */
const sliceOf = Buffer.prototype as unknown as {
  utf8Slice(this: Uint8Array, start: number, end: number): string
  latin1Slice(this: Uint8Array, start: number, end: number): string
}
/** Bytes `start` to `end` of `b` as UTF-8 text (invalid bytes as U+FFFD): Bun's decoder, cheaper than a TextDecoder call. */
export const utf8Slice = (b: Uint8Array, start: number, end: number): string => sliceOf.utf8Slice.call(b, start, end)

const fromCharCode = String.fromCharCode

/**
 * Bytes `start` to `end` of `b` as UTF-8 text (invalid bytes as U+FFFD): fewer than 8 ASCII bytes
 * in JavaScript (a native call costs more than they do), the rest by `utf8Slice`. The msgpack
 * reader keeps its own copy of this loop, on its module's cursor: through this function it
 * decoded realtime frames 3-11% slower (`bench/msgpack-decode.ts`, both orders).
 */
export function utf8Text(b: Uint8Array, start: number, end: number): string {
  if (end - start < 8) {
    let s = ''
    for (let i = start; i < end; i++) {
      const c = b[i]!
      if (c > 0x7f) return utf8Slice(b, start, end)
      s += fromCharCode(c)
    }
    return s
  }
  return utf8Slice(b, start, end)
}

/** Bytes `start` to `end` of `b` as latin1 text (one character per byte). */
export const latin1Slice = (b: Uint8Array, start: number, end: number): string =>
  sliceOf.latin1Slice.call(b, start, end)

/**
 * Writes `s` into `t` from `at`, one byte per UTF-16 unit, when every unit is ASCII: true then.
 * False, with some bytes written, when one is not (the caller encodes it another way). For short
 * strings a loop costs less than a native encoder call.
 */
export function writeAscii(t: Uint8Array, at: number, s: string): boolean {
  const n = s.length
  for (let i = 0; i < n; i++) {
    const c = s.charCodeAt(i)
    if (c > 0x7f) return false
    t[at + i] = c
  }
  return true
}
