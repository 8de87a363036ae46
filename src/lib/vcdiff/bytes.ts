/**
 * A growable byte buffer for the sections of a delta. The encoder keeps one per section and
 * reuses it (encoding is synchronous), so an encode allocates only its output.
 */
export class ByteWriter {
  buf: Uint8Array
  length = 0

  constructor(capacity = 1024) {
    this.buf = new Uint8Array(capacity)
  }

  reset(): void {
    this.length = 0
  }

  private room(n: number): void {
    if (this.length + n <= this.buf.length) return
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.length + n))
    next.set(this.buf.subarray(0, this.length))
    this.buf = next
  }

  byte(b: number): void {
    this.room(1)
    this.buf[this.length++] = b
  }

  bytes(src: Uint8Array, start: number, end: number): void {
    this.room(end - start)
    this.buf.set(src.subarray(start, end), this.length)
    this.length += end - start
  }

  /** An RFC 3284 integer: base 128, most significant group first, the high bit set on all but the last byte. */
  varint(v: number): void {
    const n = varintSize(v)
    this.room(n)
    const at = this.length
    for (let i = n - 1; i >= 0; i--) {
      this.buf[at + i] = (v & 127) | (i === n - 1 ? 0 : 128)
      v >>>= 7
    }
    this.length += n
  }
}

/** Bytes of `v` as an RFC 3284 integer (v < 2^31). */
export function varintSize(v: number): number {
  let n = 1
  while (v >= 128) {
    v >>>= 7
    n++
  }
  return n
}
