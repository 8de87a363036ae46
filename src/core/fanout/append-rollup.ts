import type { Timers } from '../ports'
import type { Message } from '../types'
import { isAppend, joinAppends } from '../model/appends'
import type { Next, Stage } from './stages'

/** What one subscription may hold of appends being rolled up; past either, they go at once. */
export interface RollupBounds {
  /** Messages with appends held. */
  maxMessages: number
  /** Bytes of their held data. */
  maxBytes: number
}

const dataBytes = (m: Message): number =>
  m.data === undefined ? 0 : typeof m.data === 'string' ? m.data.length : m.data.byteLength

/**
 * Append rollup of one subscription to one channel (the `appendRollupWindow` transport param, AI
 * Transport token streaming): an append that comes while no window is open goes at once and opens
 * a window of `windowMs`; appends that come while it is open are held, joined per message, and go
 * when it ends (one append per message carrying the joined data and the latest append's serial,
 * extras and operation), which opens the next window; a window in which nothing was held closes.
 * A steady stream so reaches the subscriber at most about once per window (25 a second at the
 * default 40 ms), and what it holds in the end is exact: every fragment, in order.
 *
 * Channel order holds: any other entry (a new message, an update, presence...) sends what is
 * held first, so nothing goes out after an entry of a later serial (the client's resume point,
 * `channelSerial` or an event id, never passes an append it has not had). Held appends go in the
 * order of their latest serial. Bounded: past `bounds` (messages held, bytes of their data) what
 * is held goes at once; appends that cannot be joined (text to bytes) send the one held first.
 */
export class AppendRollup implements Stage {
  private pending?: Map<string, Message>
  private bytes = 0
  private open = false
  private cancel?: () => void

  constructor(
    private readonly next: Next,
    private readonly windowMs: number,
    private readonly timers: Timers,
    private readonly bounds: RollupBounds,
  ) {}

  push(batch: Message[]): boolean {
    if (!this.open && !batch.some(isAppend)) return this.next(batch)
    let out: Message[] | undefined // made only once the output differs from `batch`
    for (let i = 0; i < batch.length; i++) {
      const m = batch[i]!
      if (!isAppend(m)) {
        if (this.pending) (out ??= batch.slice(0, i)).push(...this.take())
        out?.push(m)
      } else if (!this.open) {
        this.startWindow()
        out?.push(m)
      } else {
        this.hold(m, (out ??= batch.slice(0, i)))
      }
    }
    if (!out) return this.next(batch)
    return out.length ? this.next(out) : true
  }

  dispose(): void {
    this.cancel?.()
    this.cancel = undefined
    this.pending = undefined
    this.open = false
  }

  /** Joins `m` into what is held; what must go first (bounds, data that cannot be joined) goes to `out`. */
  private hold(m: Message, out: Message[]) {
    const ref = m.mutation!.serial
    const prev = this.pending?.get(ref)
    const size = dataBytes(m)
    let held = m
    if (prev) {
      const joined = this.bytes + size <= this.bounds.maxBytes ? joinAppends(prev, m) : undefined
      if (joined) held = joined
      else out.push(...this.take()) // `prev` goes as it is, `m` starts anew
    } else if (
      this.pending &&
      (this.pending.size >= this.bounds.maxMessages || this.bytes + size > this.bounds.maxBytes)
    ) {
      out.push(...this.take())
    }
    const pending = (this.pending ??= new Map())
    // a message joined to goes to the end: what is held goes in the order of the latest serials
    pending.delete(ref)
    pending.set(ref, held)
    this.bytes += size
  }

  /** What is held, in serial order; nothing is held after. */
  private take(): Message[] {
    const out = [...(this.pending?.values() ?? [])]
    this.pending = undefined
    this.bytes = 0
    return out
  }

  private startWindow() {
    this.open = true
    this.cancel = this.timers.after(this.windowMs, () => this.windowEnded())
  }

  /** What the window held goes (and the next window opens), or the window closes. */
  private windowEnded() {
    this.cancel = undefined
    if (!this.pending) {
      this.open = false
      return
    }
    const out = this.take()
    this.startWindow()
    // the transport's answer is not kept: the session learns of a full transport from its next live batch
    this.next(out)
  }
}
