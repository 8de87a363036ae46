/**
 * The byte blocks rings keep their encoded entries in. A ring holding more than a block's worth
 * writes into full blocks of BLOCK bytes, which the process shares: a block a ring no longer needs
 * (its entries dropped) goes back to a pool and the next ring that fills one takes it again, so a
 * node whose rings keep their size allocates nothing and faults no fresh page in per message, and
 * no entry is ever copied to make room. Smaller blocks (a ring holding little) are allocated
 * per ring and left to the collector.
 */

/** Bytes of a full block. */
export const BLOCK = 64 * 1024
/** Bytes of a ring's smallest block. */
const MIN_BLOCK = 512
/** Free full blocks the pool keeps at most (64 MiB); blocks given back beyond that are left to the collector. */
const POOL_MAX = 1024

const pool: Buffer[] = []
let allocated = 0

/**
 * A block for `need` bytes of a ring holding `held` bytes: a full one (from the pool when it has
 * one) once the ring holds about a block's worth, else the smallest power of two, at least
 * MIN_BLOCK, that holds what the ring and `need` make (a small ring's blocks stay about its
 * size); an entry larger than a full block gets a block of its own size.
 */
export function takeBlock(need: number, held: number): Buffer {
  if (need > BLOCK) return fresh(need)
  let size = MIN_BLOCK
  while (size < held + need && size < BLOCK) size *= 2
  if (size === BLOCK) {
    const b = pool.pop()
    if (b) return b
  }
  return fresh(size)
}

/** Gives a block back: a full one is kept for the next ring that needs one, while the pool has room. */
export function giveBlock(b: Buffer): void {
  if (b.length === BLOCK && pool.length < POOL_MAX) pool.push(b)
}

function fresh(size: number): Buffer {
  allocated++
  return Buffer.allocUnsafeSlow(size) // every byte read is written first
}

/** Blocks allocated since the process started (tests). */
export const allocatedBlocks = (): number => allocated
