import type { ByteWriter } from './bytes'
import { varintSize } from './bytes'

/** The default cache sizes of RFC 3284 (s_near = 4, s_same = 3), the ones open-vcdiff and the decoders use. */
export const NEAR_SIZE = 4
export const SAME_SIZE = 3
const SAME_SLOTS = SAME_SIZE * 256

/**
 * The address caches of RFC 3284 section 5.1, as the encoder keeps them in step with the decoder:
 * a COPY's address is written in the mode that takes fewest bytes (SAME: one byte when the cache
 * holds the address; otherwise the smallest of SELF, HERE and the NEAR offsets), then both caches
 * learn the address. Modes: 0 SELF, 1 HERE, 2..5 NEAR, 6..8 SAME.
 */
export class AddressCache {
  private readonly near = new Int32Array(NEAR_SIZE)
  private nextSlot = 0
  private readonly same = new Int32Array(SAME_SLOTS)

  reset(): void {
    this.near.fill(0)
    this.nextSlot = 0
    this.same.fill(0)
  }

  /** Bytes the address would take now (the caches unchanged). */
  cost(address: number, here: number): number {
    if (this.same[address % SAME_SLOTS] === address) return 1
    return varintSize(this.smallest(address, here))
  }

  /** Writes `address` (U-space, `here` the current position in U) to `out`; returns its mode. */
  encode(address: number, here: number, out: ByteWriter): number {
    const slot = address % SAME_SLOTS
    let mode: number
    if (this.same[slot] === address) {
      mode = 2 + NEAR_SIZE + (slot >> 8)
      out.byte(slot & 255)
    } else {
      out.varint(this.smallest(address, here))
      mode = this.lastMode
    }
    this.update(address)
    return mode
  }

  /** The mode `smallest` chose last. */
  private lastMode = 0

  /** The smallest encoding of `address` outside SAME; its mode is left in `lastMode`. */
  private smallest(address: number, here: number): number {
    let mode = 0
    let value = address
    if (here - address < value) {
      mode = 1
      value = here - address
    }
    for (let i = 0; i < NEAR_SIZE; i++) {
      const d = address - this.near[i]!
      if (d >= 0 && d < value) {
        mode = 2 + i
        value = d
      }
    }
    this.lastMode = mode
    return value
  }

  private update(address: number): void {
    this.near[this.nextSlot] = address
    this.nextSlot = (this.nextSlot + 1) % NEAR_SIZE
    this.same[address % SAME_SLOTS] = address
  }
}
