/**
 * A hash index of 4-byte windows: the hash rolls over the bytes (one shift and one load per
 * position), each bucket holds the position last inserted with that hash and a chain links it to
 * the ones inserted before. Positions are stored plus one (0: none). The arrays are reused from one encode
 * to the next and only the part in use is cleared.
 */
export const WINDOW = 4

export class BlockIndex {
  private table = new Int32Array(256)
  private chain = new Int32Array(256)
  private bits = 8

  /** Empties the index for `n` bytes of input. */
  reset(n: number): void {
    let bits = 8
    while (bits < 20 && 1 << bits < n * 2) bits++
    this.bits = bits
    const size = 1 << bits
    if (this.table.length < size) this.table = new Int32Array(size)
    else this.table.fill(0, 0, size)
    if (this.chain.length < n) this.chain = new Int32Array(Math.max(n, this.chain.length * 2))
  }

  /** The bucket of the window whose 4 bytes read `key` (little-endian). */
  bucket(key: number): number {
    return Math.imul(key, 0x9e3779b1) >>> (32 - this.bits)
  }

  insert(bucket: number, position: number): void {
    this.chain[position] = this.table[bucket]!
    this.table[bucket] = position + 1
  }

  /** The position last inserted in `bucket`, plus one (0: none). */
  first(bucket: number): number {
    return this.table[bucket]!
  }

  /** The position before `position` in its bucket, plus one (0: none). */
  next(position: number): number {
    return this.chain[position]!
  }

  /**
   * Indexes every window of `bytes`, rolling the key one byte at a time from the end, so that a
   * bucket lists its positions earliest first (a periodic text then copies in long runs).
   */
  indexAll(bytes: Uint8Array): void {
    const n = bytes.length
    if (n < WINDOW) return
    let key = keyAt(bytes, n - WINDOW)
    this.insert(this.bucket(key), n - WINDOW)
    for (let p = n - WINDOW - 1; p >= 0; p--) {
      key = (key << 8) | bytes[p]!
      this.insert(this.bucket(key), p)
    }
  }
}

/** The 4 bytes at `p`, little-endian. */
export const keyAt = (b: Uint8Array, p: number): number =>
  b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16) | (b[p + 3]! << 24)
