/** Polls `fn` until `ok` holds for its value (every 50 ms); rejects after `ms`, with the last value. */
export async function waitFor<T>(fn: () => T | Promise<T>, ok: (v: T) => boolean, ms = 20_000): Promise<T> {
  const until = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (ok(v)) return v
    if (Date.now() > until) throw new Error(`condition not met in ${ms} ms; last value ${JSON.stringify(v)}`)
    await Bun.sleep(50)
  }
}
