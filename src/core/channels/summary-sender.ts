import type { Clock, Timers } from '../ports'

interface Run {
  again: boolean
  /** Settles when the round after the current one has read (and sent, if it changed) the summary. */
  next: Promise<void>
  settleNext: () => void
}

/** Times a message's summary round that failed is tried again, and the first wait (ms; doubled each time, up to the most). */
export const SUMMARY_RETRIES = 8
export const SUMMARY_RETRY_MS = 250
export const SUMMARY_RETRY_MAX_MS = 5000

/**
 * Sends the summaries of annotated messages, one message at a time per node, at most one summary
 * of a message per `intervalMs`: a change asks for its message's summary to go out (at once when
 * none went out for the interval); while one is being read, sent or waited for, further changes of
 * that message only mark it, and the sender goes on, one round per interval, until a round reads
 * what was last sent with no change marked meanwhile. A burst of changes so costs one summary per
 * interval, not one each (every subscriber of the channel gets every one, and a summary may be
 * tens of kilobytes), and the last summary sent is the current state's, also when a change made on
 * another node went out in between (summaries of two nodes may arrive in either order: the final
 * read settles it). A caller's promise settles once a round that read after its change is done.
 * A round that failed (reading or sending) is done again later (SUMMARY_RETRIES): a brief outage
 * of the store or broker does not leave subscribers on an older summary until the next change.
 */
export class SummarySender {
  private readonly running = new Map<string, Run>()

  constructor(
    private readonly clock: Clock,
    private readonly timers: Timers,
    private readonly intervalMs: number,
  ) {}

  /** `read`: the message's current summary (JSON-comparable); `publish`: sends one. */
  send<T>(key: string, read: () => Promise<T>, publish: (summary: T) => Promise<void>): Promise<void> {
    const r = this.running.get(key)
    if (r) {
      r.again = true
      return r.next
    }
    const run = deferredRun()
    this.running.set(key, run)
    const first = run.next
    void this.rounds(key, run, read, publish)
    return first
  }

  /** Messages whose summary rounds are under way (each holds at most one timer). */
  get size(): number {
    return this.running.size
  }

  private async rounds<T>(key: string, run: Run, read: () => Promise<T>, publish: (summary: T) => Promise<void>) {
    let sent: string | undefined
    let sentAt = -Infinity
    let failures = 0
    let retryAt = -Infinity
    try {
      for (;;) {
        const wait = Math.max(sentAt + this.intervalMs, retryAt) - this.clock.now()
        if (wait > 0) await new Promise<void>((resolve) => this.timers.after(wait, resolve))
        // changes marked from now on are covered by the round after this one
        const settle = run.settleNext
        const following = deferredRun()
        run.next = following.next
        run.settleNext = following.settleNext
        run.again = false
        try {
          const summary = await read()
          const k = JSON.stringify(summary)
          if (k !== sent) {
            await publish(summary)
            sent = k
            sentAt = this.clock.now()
          } else if (!run.again) return
          failures = 0
        } catch (e) {
          // the store or the broker failed (a failover, a timeout): the change is recorded, its
          // summary is read and sent again after a wait that doubles, SUMMARY_RETRIES times at
          // most; after that, the message's next change sends it (a summary is the whole state)
          if (++failures > SUMMARY_RETRIES) throw e
          retryAt = this.clock.now() + Math.min(SUMMARY_RETRY_MAX_MS, SUMMARY_RETRY_MS * 2 ** (failures - 1))
        } finally {
          settle()
        }
      }
    } catch {
      // given up: see above
    } finally {
      this.running.delete(key)
      run.settleNext()
    }
  }
}

function deferredRun(): Run {
  let settleNext!: () => void
  const next = new Promise<void>((resolve) => (settleNext = resolve))
  return { again: false, next, settleNext }
}
