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

/**
 * A realtime publish's message ids are `<connectionId>:<msgSerial>:<index>`. Its drafts also carry
 * the two numbers under this key (`msgSerial × 2^16 + index`, one number: no object per message),
 * so a store that keeps the message's connection id keeps the id as numbers: the ring does (a
 * resume's entries are read back with their id made again), and neither reads nor writes the id's
 * characters per publish. A symbol, so no encoder of a message (wire, log, snapshot) sees it.
 */
export const ID_ON_CONNECTION = Symbol('message id on its connection')
export interface IdOnConnection {
  [ID_ON_CONNECTION]?: number
}
/** Messages a protocol message may carry for their ids to be kept as numbers (the index's range). */
const INDEXES = 2 ** 16
/** The messages of a protocol message whose ids can be kept as numbers (msgSerial below 2^32). */
export const idOnConnectionFits = (msgSerial: number, messages: number): boolean =>
  Number.isInteger(msgSerial) && msgSerial >= 0 && msgSerial < 2 ** 32 && messages <= INDEXES
/** The number of the id of message `index` of protocol message `msgSerial` (when they fit). */
export const idOnConnection = (msgSerial: number, index: number): number => msgSerial * INDEXES + index
/** The msgSerial of such a number. */
export const msgSerialOf = (id: number): number => Math.floor(id / INDEXES)
/** The index of such a number. */
export const indexOf = (id: number): number => id % INDEXES
