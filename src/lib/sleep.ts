import { capture, made } from './capture'

/** Resolves after `ms` milliseconds (a timer, so the core needs no runtime global). */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** How often pending deadlines are checked: a deadline fires up to twice this late. */
const SWEEP_MS = 25

/** A promise under a deadline: the source, and how its wrapper is rejected when the deadline passes first. */
interface Deadline {
  /** When it is due: set by the first sweep that finds the promise pending (0 until then). */
  at: number
  source: Promise<unknown>
  reject: (e: unknown) => void
  timedOut: (ms: number) => unknown
  ms: number
}

/**
 * Deadlines made since the last sweep, and those found still pending by a sweep. Nothing is taken
 * out when a promise settles (that would take a callback, a closure, per promise): each sweep
 * (every SWEEP_MS, one unreferenced timer while any are held) drops the settled ones and fires the
 * late ones. Almost every promise has settled by the first sweep after it was made, so a deadline
 * costs an array slot and one status read; what is held is at most one sweep's worth of settled
 * promises. A deadline is timed from that first sweep, not from when it was made: no clock is read
 * per promise, and it never fires early (it fires up to two sweeps late).
 */
let fresh: Deadline[] = []
const waiting: Deadline[] = []
let sweeper: ReturnType<typeof setInterval> | undefined

const pending = (d: Deadline) => Bun.peek.status(d.source) === 'pending'

function sweep() {
  const now = performance.now()
  const since = fresh
  fresh = []
  for (const d of since)
    if (pending(d)) {
      d.at = now + d.ms
      waiting.push(d)
    }
  let kept = 0
  for (const d of waiting) {
    if (!pending(d)) continue
    if (d.at <= now) d.reject(d.timedOut(d.ms))
    else waiting[kept++] = d
  }
  waiting.length = kept
  if (kept === 0 && fresh.length === 0 && sweeper) {
    clearInterval(sweeper)
    sweeper = undefined
  }
}

/**
 * `p`, or a rejection with `timedOut(ms)` once `ms` passed first (up to 2 × SWEEP_MS late; `p`'s
 * own errors pass through unchanged). `timedOut` is best a function made once, not per call.
 */
export function settleWithin<T>(p: Promise<T>, ms: number, timedOut: (ms: number) => unknown): Promise<T> {
  const promise = new Promise<T>(capture)
  const { resolve, reject } = made
  p.then(resolve, reject)
  fresh.push({ at: 0, source: p, reject, timedOut, ms })
  if (!sweeper) {
    sweeper = setInterval(sweep, SWEEP_MS)
    sweeper.unref?.()
  }
  return promise
}
