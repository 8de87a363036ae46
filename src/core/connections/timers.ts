/** Timers of the connections (the node's are the runtime's; unit tests drive their own with a test clock). */
export interface Timers {
  after(ms: number, fn: () => void): () => void
  every(ms: number, fn: () => void): () => void
}

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
