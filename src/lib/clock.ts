/**
 * Time as the core reads it: a clock and timers (ports of the core, re-exported by
 * core/ports.ts), and the runtime's own implementations, which the composition root hands to the
 * core. Tests hand it a test clock and timers they drive, so nothing in core reads the time or
 * sets a timer itself (test/architecture.test.ts).
 */

export interface Clock {
  /** Now, in ms since the epoch. */
  now(): number
}

/** Timers; the returned function cancels. The runtime's repeating ones never keep the process alive. */
export interface Timers {
  /** Runs `fn` once, `ms` from now. */
  after(ms: number, fn: () => void): () => void
  /** Runs `fn` every `ms`. */
  every(ms: number, fn: () => void): () => void
  /**
   * Runs `fn` once, after this turn of the event loop (its I/O handled: the runtime's
   * `setImmediate`), so what one turn produced is handled together (fan-out batches, one ACK for
   * the protocol messages a client sent together).
   */
  soon(fn: () => void): void
}

export const systemClock: Clock = { now: () => Date.now() }

/**
 * The longest delay the runtime's timers take (2^31-1 ms, 24.8 days): a longer one fires at once,
 * so a token valid for a month would "expire" the moment it was checked.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1

export const systemTimers: Timers = {
  /** Any delay: one past MAX_TIMER_MS is waited in steps of at most that (an infinite one never fires). */
  after(ms, fn) {
    if (!(ms > MAX_TIMER_MS)) {
      const t = setTimeout(fn, ms)
      return () => clearTimeout(t)
    }
    let left = ms
    let t: ReturnType<typeof setTimeout>
    const step = () => {
      if (left <= 0) return fn()
      const wait = Math.min(left, MAX_TIMER_MS)
      left -= wait
      t = setTimeout(step, wait)
    }
    step()
    return () => clearTimeout(t)
  },
  every(ms, fn) {
    const t = setInterval(fn, ms)
    ;(t as { unref?: () => void }).unref?.()
    return () => clearInterval(t)
  },
  soon(fn) {
    soonQueue.push(fn)
    if (!soonScheduled) {
      soonScheduled = true
      setImmediate(runSoon)
    }
  },
}

/**
 * What `soon` was handed this turn, run by one `setImmediate` (in order): each connection with an
 * answer to send hands its flush every turn, and one runtime immediate per callback cost ~170 ns
 * against ~65 for a queue drained by one (in a loop, 50 callbacks a turn). What is handed while
 * they run waits for the next turn, as with `setImmediate`. One that throws is uncaught, as it
 * would have been; those after it run on the next turn, before anything handed later.
 */
let soonQueue: Array<() => void> = []
let soonScheduled = false
function runSoon() {
  soonScheduled = false
  const run = soonQueue
  soonQueue = []
  let i = 0
  try {
    for (; i < run.length; i++) run[i]!()
  } finally {
    if (i < run.length - 1) {
      soonQueue = run.slice(i + 1).concat(soonQueue)
      soonScheduled = true
      setImmediate(runSoon)
    }
  }
}
