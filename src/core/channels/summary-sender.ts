import type { Clock, Timers } from '../ports'

interface Run {
  again: boolean
  /** Settles when the round after the current one has read (and sent, if it changed) the summary. */
  next: Promise<void>
  settleNext: () => void
}

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
    try {
      for (;;) {
        const wait = sentAt + this.intervalMs - this.clock.now()
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
        } finally {
          settle()
        }
      }
    } catch {
      // the store or the broker failed: the change is recorded, and the next change of the
      // message sends its summary again (a summary is the whole state, never a difference)
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
