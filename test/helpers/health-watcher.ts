/**
 * Polls `<base>/health` until stdin closes, then prints `{"slowest": ms, "answers": n}` and exits.
 * Run as a process of its own by `watchHealth` (test/hostile/fixture.ts), so that what a test's own
 * process spends on an attack (building and writing frames) never counts as the gateway's stall.
 */
export {}
const base = process.argv[2]
if (!base) throw new Error('usage: health-watcher.ts <base url>')
let running = true
let slowest = 0
let answers = 0
let failure: string | undefined
const loop = (async () => {
  while (running) {
    const t = performance.now()
    try {
      // (a gateway on TLS has a certificate made for the test)
      const r = await fetch(`${base}/health`, { tls: { rejectUnauthorized: false } } as RequestInit)
      await r.arrayBuffer()
      if (r.status !== 200) failure = `/health answered ${r.status}`
    } catch (e) {
      failure = `/health failed: ${(e as Error).message}`
    }
    slowest = Math.max(slowest, performance.now() - t)
    answers++
    await Bun.sleep(5)
  }
})()
for await (const _ of Bun.stdin.stream()) {
  // nothing is sent: the parent closes stdin to stop the watch
}
running = false
await loop
process.stdout.write(JSON.stringify({ slowest, answers, failure }))
