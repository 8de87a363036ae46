import { randomId } from '../../lib/crypto'

/**
 * Message id bases: a random per-process prefix plus a counter, so ids are unique across
 * nodes and restarts without a random draw per publish.
 */
export class IdGenerator {
  private readonly prefix = randomId(10)
  private n = 0

  next(): string {
    return this.prefix + this.n++
  }
}
