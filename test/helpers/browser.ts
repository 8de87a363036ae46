import { requireSystem } from './system'

export const CHROMIUM = '/usr/bin/chromium'
/** Debian's chromium is there (else the browser tests skip, or fail under CI). */
export const chromiumAvailable = () => requireSystem(CHROMIUM, "Debian's chromium")

/** Debian's chromium, headless, with a fresh profile dir (playwright passes it as --user-data-dir); never a downloaded browser. */
export async function launchChromium(profile: string) {
  const { chromium } = await import('playwright-core')
  return chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
    ],
  })
}

/** Polls `fn` (e.g. a page.evaluate) until `ok` holds for its value; rejects after `ms`. */
export async function waitFor<T>(fn: () => Promise<T>, ok: (v: T) => boolean, ms = 20_000): Promise<T> {
  const until = Date.now() + ms
  for (;;) {
    const v = await fn()
    if (ok(v)) return v
    if (Date.now() > until) throw new Error(`condition not met in ${ms} ms; last value ${JSON.stringify(v)}`)
    await Bun.sleep(50)
  }
}
