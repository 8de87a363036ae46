/** Helpers of the LiveObjects plugin tests. */

/** The channel modes the plugin needs. */
export const MODES: Array<'OBJECT_SUBSCRIBE' | 'OBJECT_PUBLISH'> = ['OBJECT_SUBSCRIBE', 'OBJECT_PUBLISH']

/** Retries `check` until it passes (it throws until then); fails with its last error after `ms`. */
export async function eventually(check: () => void | Promise<void>, ms = 8000): Promise<void> {
  const until = Date.now() + ms
  for (;;) {
    try {
      return await check()
    } catch (e) {
      if (Date.now() > until) throw e
      await new Promise((r) => setTimeout(r, 20))
    }
  }
}
