/** Resolves after `ms` milliseconds (a timer, so the core needs no runtime global). */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** How often pending deadlines are checked: a deadline fires up to this late. */
const SWEEP_MS = 25

/**
 * Pending deadlines. One sweeper timer (every SWEEP_MS, unreferenced, while any are pending)
 * fires the late ones: a deadline per request or per Redis command costs a set entry, not a
 * timer of its own (a timer's arm and clear cost more than the entry on the hot paths).
 */
const pending = new Set<{ at: number; fire: () => void }>()
let sweeper: ReturnType<typeof setInterval> | undefined

function sweep() {
  const now = performance.now()
  for (const d of pending)
    if (d.at <= now) {
      pending.delete(d)
      d.fire()
    }
  if (pending.size === 0 && sweeper) {
    clearInterval(sweeper)
    sweeper = undefined
  }
}

/**
 * `p`, or a rejection with `timedOut()` once `ms` passed first (up to SWEEP_MS late; `p`'s own
 * errors pass through unchanged).
 */
export function settleWithin<T>(p: Promise<T>, ms: number, timedOut: () => unknown): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const d = { at: performance.now() + ms, fire: () => reject(timedOut()) }
    pending.add(d)
    if (!sweeper) {
      sweeper = setInterval(sweep, SWEEP_MS)
      sweeper.unref?.()
    }
    p.then(
      (v) => {
        pending.delete(d)
        resolve(v)
      },
      (e) => {
        pending.delete(d)
        reject(e)
      },
    )
  })
}
