/** A minimal event-stream client for tests: real HTTP, records parsed as the SSE standard says. */
export interface SseEvent {
  id?: string
  event: string
  data: string
}

export interface SseClient {
  status: number
  response: Response
  events: SseEvent[]
  /** Raw text received so far. */
  text: string
  /** Resolves when `pred` holds for the received events (rejects after `ms`). */
  until(pred: (events: SseEvent[]) => boolean, ms?: number): Promise<SseEvent[]>
  /** Resolves when the server ends the stream. */
  ended: Promise<void>
  close(): void
}

export async function openSse(url: string, headers: Record<string, string> = {}): Promise<SseClient> {
  const ctrl = new AbortController()
  const response = await fetch(url, { headers, signal: ctrl.signal })
  const events: SseEvent[] = []
  const waiters = new Set<() => void>()
  const client: SseClient = {
    status: response.status,
    response,
    events,
    text: '',
    until(pred, ms = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (pred(events)) {
            waiters.delete(check)
            clearTimeout(timer)
            resolve(events)
          }
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`timed out; got ${events.length} events: ${JSON.stringify(events.slice(-3))}`))
        }, ms)
        waiters.add(check)
        check()
      })
    },
    ended: Promise.resolve(),
    close: () => ctrl.abort(),
  }
  if (response.status !== 200 || !response.body) return client
  client.ended = (async () => {
    const reader = response.body!.getReader()
    const dec = new TextDecoder()
    let buf = ''
    let cur: { id?: string; event?: string; data: string[] } = { data: [] }
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) break
        const chunk = dec.decode(value, { stream: true })
        client.text += chunk
        buf += chunk
        let nl: number
        while ((nl = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, nl)
          buf = buf.slice(nl + 1)
          if (line === '') {
            if (cur.data.length || cur.event)
              events.push({ id: cur.id, event: cur.event ?? 'message', data: cur.data.join('\n') })
            cur = { data: [] }
          } else if (!line.startsWith(':')) {
            const c = line.indexOf(':')
            const field = c < 0 ? line : line.slice(0, c)
            const value = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '')
            if (field === 'id') cur.id = value
            else if (field === 'event') cur.event = value
            else if (field === 'data') cur.data.push(value)
          }
        }
        for (const w of [...waiters]) w()
      }
    } catch {
      /* aborted */
    }
    for (const w of [...waiters]) w()
  })()
  return client
}

export const messages = (events: SseEvent[]) => events.filter((e) => e.event === 'message')
