import type { HistoryQuery, Message } from '../types'

/**
 * Fixed-capacity circular buffer of a channel's recent messages, oldest first, serials
 * increasing. Used for history of short-lived channels, rewind and resume.
 */
export class Ring {
  private buf: (Message | undefined)[]
  private head = 0
  private len = 0

  /**
   * Every message with a serial above `floor` is in the ring or was never published: the floor
   * rises as messages are dropped (overflow, expiry). Starts at the ring's creation time, since
   * nothing is known of what came before.
   */
  floor: string

  constructor(readonly capacity: number, floor: string) {
    this.buf = new Array(capacity)
    this.floor = floor
  }

  get size() { return this.len }

  push(m: Message): void {
    if (this.len === this.capacity) {
      // full: the oldest slot (head) is overwritten
      this.floor = this.buf[this.head]!.serial
      this.buf[this.head] = m
      this.head = (this.head + 1) % this.capacity
      return
    }
    this.buf[(this.head + this.len) % this.capacity] = m
    this.len++
  }

  /** i-th message, 0 = oldest. */
  at(i: number): Message {
    return this.buf[(this.head + i) % this.capacity]!
  }

  oldest(): Message | undefined { return this.len ? this.at(0) : undefined }
  newest(): Message | undefined { return this.len ? this.at(this.len - 1) : undefined }

  /** Index of the first message with serial > `serial` (len if none). */
  indexAfter(serial: string): number {
    let lo = 0
    let hi = this.len
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (this.at(mid).serial <= serial) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** Messages with serial > `serial`, oldest first, at most `limit`. */
  after(serial: string, limit = Infinity): Message[] {
    const out: Message[] = []
    for (let i = this.indexAfter(serial); i < this.len && out.length < limit; i++) out.push(this.at(i))
    return out
  }

  /** Drops messages older than `minTimestamp` from the old end. */
  expire(minTimestamp: number): void {
    while (this.len && this.at(0).timestamp < minTimestamp) {
      this.floor = this.at(0).serial
      this.buf[this.head] = undefined
      this.head = (this.head + 1) % this.capacity
      this.len--
    }
  }

  /** History query over the ring (timestamps inclusive, cursor exclusive). */
  query(q: HistoryQuery, minTimestamp: number): Message[] {
    const out: Message[] = []
    const start = Math.max(q.start ?? 0, minTimestamp)
    const end = q.end ?? Infinity
    const inRange = (m: Message) => m.timestamp >= start && m.timestamp <= end
    if (q.direction === 'forwards') {
      for (let i = q.cursor ? this.indexAfter(q.cursor) : 0; i < this.len && out.length < q.limit; i++) {
        const m = this.at(i)
        if (m.timestamp > end) break
        if (inRange(m)) out.push(m)
      }
    } else {
      let i = q.cursor ? this.indexAfter(q.cursor) - 1 : this.len - 1
      // cursor for backwards pages is the last (oldest) serial returned: continue strictly before it
      if (q.cursor && i >= 0 && this.at(i).serial === q.cursor) i--
      for (; i >= 0 && out.length < q.limit; i--) {
        const m = this.at(i)
        if (m.timestamp < start) break
        if (inRange(m)) out.push(m)
      }
    }
    return out
  }
}

