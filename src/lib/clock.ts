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
}

export const systemClock: Clock = { now: () => Date.now() }

export const systemTimers: Timers = {
  after(ms, fn) {
    const t = setTimeout(fn, ms)
    return () => clearTimeout(t)
  },
  every(ms, fn) {
    const t = setInterval(fn, ms)
    ;(t as { unref?: () => void }).unref?.()
    return () => clearInterval(t)
  },
}
