/**
 * Counting subscriber of the scale scenario (an agent, see lib/agent.ts): holds event streams
 * (the gateway's `/sse`, nchan's `/sub`) and counts the `data:` lines they carry, one per
 * message delivered, whatever the payload (the scenario's load generator sends a fixed body, so
 * nothing per message can be checked but the count). Driven by lib/delivery-count.ts.
 */
import { serveAgent } from './lib/agent'
import { countDataLines } from './lib/data-lines'

const streams: AbortController[] = []
let deliveries = 0
let failed = 0
let ended = 0

async function read(url: string, opened: (ok: boolean) => void) {
  const abort = new AbortController()
  streams.push(abort)
  try {
    const res = await fetch(url, { headers: { accept: 'text/event-stream' }, signal: abort.signal })
    if (res.status !== 200 || !res.body) {
      failed++
      opened(false)
      return
    }
    opened(true)
    // as if a newline came before the stream: a data line that opens it counts too
    let tail: Buffer = Buffer.from('\n')
    for await (const chunk of res.body) {
      const [n, t] = countDataLines(chunk, tail)
      deliveries += n
      tail = t
    }
    ended++
  } catch {
    if (!abort.signal.aborted) {
      failed++
      opened(false)
    }
  }
}

serveAgent({
  /** Opens a stream per url; resolves once each has answered (200, or failed). */
  async open({ urls }: { urls: string[] }) {
    let ok = 0
    await Promise.all(
      urls.map(
        (url) =>
          new Promise<void>((resolve) => {
            void read(url, (good) => {
              if (good) ok++
              resolve()
            })
          }),
      ),
    )
    return { opened: ok, failed }
  },
  count() {
    return { deliveries, failed, ended }
  },
  close() {
    for (const a of streams.splice(0)) a.abort()
    return true
  },
})
