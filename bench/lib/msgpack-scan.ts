/**
 * A MessagePack reader that walks encoded bytes without building values, for the realtime
 * benchmark subscribers: thousands of sockets receive the same delivery frames, and decoding each
 * one into objects (msgpackr: ~0.9 µs per message) would make the subscriber process, not the
 * gateway, the bottleneck. It follows the format exactly (every type, its length and nesting is
 * checked, so a malformed frame throws rather than being miscounted) and allocates nothing.
 * Control frames are decoded whole with msgpackr (realtime-client.ts).
 */
export class MsgpackScan {
  buf: Uint8Array = new Uint8Array(0)
  pos = 0

  reset(buf: Uint8Array): this {
    this.buf = buf
    this.pos = 0
    return this
  }

  /** Entries of the map at the cursor (the cursor moves to its first key). */
  map(): number {
    const b = this.byte()
    if (b >= 0x80 && b <= 0x8f) return b & 0x0f
    if (b === 0xde) return this.u16()
    if (b === 0xdf) return this.u32()
    throw this.unexpected('map', b)
  }

  /** Elements of the array at the cursor (the cursor moves to its first element). */
  array(): number {
    const b = this.byte()
    if (b >= 0x90 && b <= 0x9f) return b & 0x0f
    if (b === 0xdc) return this.u16()
    if (b === 0xdd) return this.u32()
    throw this.unexpected('array', b)
  }

  /** Byte length of the string at the cursor, or -1 (cursor unmoved) when it is not a string. */
  str(): number {
    const b = this.peek()
    let n: number
    if (b >= 0xa0 && b <= 0xbf) {
      this.pos++
      n = b & 0x1f
    } else if (b === 0xd9) {
      this.pos++
      n = this.byte()
    } else if (b === 0xda) {
      this.pos++
      n = this.u16()
    } else if (b === 0xdb) {
      this.pos++
      n = this.u32()
    } else return -1
    this.need(n)
    return n
  }

  /** Reads a string key and tells whether it equals `key` (ASCII bytes); the cursor ends after it. */
  keyIs(key: Uint8Array): boolean {
    const n = this.str()
    if (n < 0) throw this.unexpected('string key', this.peek(), this.pos)
    const at = this.pos
    this.pos += n
    if (n !== key.length) return false
    for (let i = 0; i < n; i++) if (this.buf[at + i] !== key[i]) return false
    return true
  }

  /** The integer at the cursor (positive or negative fixint, int/uint 8-32, 64-bit as a double). */
  int(): number {
    const b = this.byte()
    if (b <= 0x7f) return b
    if (b >= 0xe0) return b - 0x100
    switch (b) {
      case 0xcc:
        return this.byte()
      case 0xcd:
        return this.u16()
      case 0xce:
        return this.u32()
      case 0xcf:
        return this.big(false)
      case 0xd0:
        return (this.byte() << 24) >> 24
      case 0xd1:
        return (this.u16() << 16) >> 16
      case 0xd2:
        return this.u32() | 0
      case 0xd3:
        return this.big(true)
    }
    throw this.unexpected('integer', b)
  }

  /** Moves the cursor past the value at it, whatever its type. */
  skip(): void {
    let left = 1 // values still to skip: containers add their children
    while (left-- > 0) {
      const b = this.byte()
      if (b <= 0x7f || b >= 0xe0 || b === 0xc0 || b === 0xc2 || b === 0xc3) continue
      if (b >= 0x80 && b <= 0x8f) left += 2 * (b & 0x0f)
      else if (b >= 0x90 && b <= 0x9f) left += b & 0x0f
      else if (b >= 0xa0 && b <= 0xbf) this.advance(b & 0x1f)
      else
        switch (b) {
          case 0xc4:
          case 0xd9:
            this.advance(this.byte())
            break
          case 0xc5:
          case 0xda:
            this.advance(this.u16())
            break
          case 0xc6:
          case 0xdb:
            this.advance(this.u32())
            break
          case 0xc7:
            this.advance(this.byte() + 1)
            break
          case 0xc8:
            this.advance(this.u16() + 1)
            break
          case 0xc9:
            this.advance(this.u32() + 1)
            break
          case 0xca:
            this.advance(4)
            break
          case 0xcb:
            this.advance(8)
            break
          case 0xcc:
          case 0xd0:
            this.advance(1)
            break
          case 0xcd:
          case 0xd1:
            this.advance(2)
            break
          case 0xce:
          case 0xd2:
            this.advance(4)
            break
          case 0xcf:
          case 0xd3:
            this.advance(8)
            break
          case 0xd4:
            this.advance(2)
            break
          case 0xd5:
            this.advance(3)
            break
          case 0xd6:
            this.advance(5)
            break
          case 0xd7:
            this.advance(9)
            break
          case 0xd8:
            this.advance(17)
            break
          case 0xdc:
            left += this.u16()
            break
          case 0xdd:
            left += this.u32()
            break
          case 0xde:
            left += 2 * this.u16()
            break
          case 0xdf:
            left += 2 * this.u32()
            break
          default:
            throw this.unexpected('a MessagePack value', b) // 0xc1: never used
        }
    }
  }

  private peek(): number {
    this.need(1)
    return this.buf[this.pos]!
  }
  private byte(): number {
    this.need(1)
    return this.buf[this.pos++]!
  }
  // big-endian integers read byte by byte: a DataView per frame cost more than the reads
  private u16(): number {
    this.need(2)
    const b = this.buf
    const v = (b[this.pos]! << 8) | b[this.pos + 1]!
    this.pos += 2
    return v
  }
  private u32(): number {
    this.need(4)
    const b = this.buf
    const p = this.pos
    this.pos += 4
    return b[p]! * 0x1000000 + ((b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!)
  }
  private big(signed: boolean): number {
    this.need(8)
    const view = new DataView(this.buf.buffer, this.buf.byteOffset + this.pos, 8) // rare: 64-bit integers
    this.pos += 8
    return Number(signed ? view.getBigInt64(0) : view.getBigUint64(0))
  }
  private advance(n: number): void {
    this.need(n)
    this.pos += n
  }
  private need(n: number): void {
    if (this.pos + n > this.buf.length)
      throw new Error(`truncated MessagePack: ${n} byte(s) needed at ${this.pos} of ${this.buf.length}`)
  }
  private unexpected(what: string, b: number, at = this.pos - 1): Error {
    return new Error(`MessagePack: expected ${what} at byte ${at}, found 0x${b.toString(16)}`)
  }
}

/** A key as the bytes keyIs compares. */
export const keyBytes = (key: string): Uint8Array => new TextEncoder().encode(key)
