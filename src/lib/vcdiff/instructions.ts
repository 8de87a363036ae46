import { AddressCache } from './address-cache'
import { ByteWriter } from './bytes'

/**
 * The three sections of a window (RFC 3284 section 4.3) written with the default code table
 * (section 5.6): ADD sizes 1-17 and COPY sizes 4-18 in the opcode, larger ones as a size after
 * it, and the table's double opcodes where two instructions fit one (ADD 1-4 then COPY 4-6 in
 * modes 0-5, ADD 1-4 then COPY 4 in modes 6-8, COPY 4 then ADD 1).
 */
export class Sections {
  readonly data = new ByteWriter()
  readonly inst = new ByteWriter()
  readonly addr = new ByteWriter()
  private readonly cache = new AddressCache()
  /** Position in `inst` of the last opcode when it is a lone ADD of 1-4 bytes (-1: none). */
  private addAt = -1
  private addSize = 0
  /** Position in `inst` of the last opcode when it is a lone COPY of 4 bytes (-1: none). */
  private copyAt = -1
  private copyMode = 0

  reset(): void {
    this.data.reset()
    this.inst.reset()
    this.addr.reset()
    this.cache.reset()
    this.addAt = this.copyAt = -1
  }

  /** Bytes written so far. */
  get size(): number {
    return this.data.length + this.inst.length + this.addr.length
  }

  /** Address bytes a COPY of `address` would take now. */
  addressCost(address: number, here: number): number {
    return this.cache.cost(address, here)
  }

  /** ADD of `src[start..end)`. */
  add(src: Uint8Array, start: number, end: number): void {
    const n = end - start
    if (n <= 0) return
    this.data.bytes(src, start, end)
    if (n === 1 && this.copyAt >= 0) {
      this.inst.buf[this.copyAt] = 247 + this.copyMode
      this.copyAt = -1
      return
    }
    this.copyAt = -1
    if (n <= 17) {
      this.inst.byte(n + 1)
      if (n <= 4) {
        this.addAt = this.inst.length - 1
        this.addSize = n
      } else this.addAt = -1
    } else {
      this.inst.byte(1)
      this.inst.varint(n)
      this.addAt = -1
    }
  }

  /** COPY of `size` bytes from `address` in U (source then target), `here` being the target position in U. */
  copy(size: number, address: number, here: number): void {
    const mode = this.cache.encode(address, here, this.addr)
    const addAt = this.addAt
    this.addAt = -1
    this.copyAt = -1
    if (addAt >= 0) {
      if (mode <= 5 && size >= 4 && size <= 6) {
        this.inst.buf[addAt] = 163 + 12 * mode + 3 * (this.addSize - 1) + (size - 4)
        return
      }
      if (mode >= 6 && size === 4) {
        this.inst.buf[addAt] = 235 + 4 * (mode - 6) + (this.addSize - 1)
        return
      }
    }
    if (size >= 4 && size <= 18) {
      this.inst.byte(19 + 16 * mode + size - 3)
      if (size === 4) {
        this.copyAt = this.inst.length - 1
        this.copyMode = mode
      }
    } else {
      this.inst.byte(19 + 16 * mode)
      this.inst.varint(size)
    }
  }
}
