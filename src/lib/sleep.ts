/** Resolves after `ms` milliseconds (a timer, so the core needs no runtime global). */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/** `p`, or a rejection with `timedOut()` once `ms` passed first (`p`'s own errors pass through unchanged). */
export function settleWithin<T>(p: Promise<T>, ms: number, timedOut: () => unknown): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(timedOut()), ms)
    p.then(
      (v) => {
        clearTimeout(timer)
        resolve(v)
      },
      (e) => {
        clearTimeout(timer)
        reject(e)
      },
    )
  })
}
