/**
 * An event stream of the soak that reconnects: it reads `/sse` (enveloped records), is cut every
 * so often and opened again with `Last-Event-ID` (the last id it saw), as a browser's EventSource
 * does after a drop; across its reconnects it must receive every message exactly once.
 */
import type { SoakReceiver } from './soak-ledger'

export class ReconnectingStream {
  private abort?: AbortController
  private lastId?: string
  private stopped = false
  private cutTimer?: ReturnType<typeof setTimeout>
  private running?: Promise<void>
  reconnects = 0

  constructor(
    private readonly base: () => string,
    private readonly key: string,
    private readonly receiver: SoakReceiver,
    /** How long each connection lives before it is cut (ms): drawn from [min, max). */
    private readonly lifeMs: [number, number],
  ) {}

  /** Opens the stream; resolves once it answered 200 (subscribed: what is published next is delivered). */
  async start(): Promise<void> {
    const opened = Promise.withResolvers<void>()
    this.running = this.loop(opened)
    await opened.promise
  }

  private async loop(opened: PromiseWithResolvers<void>) {
    let first = true
    while (!this.stopped) {
      try {
        await this.once(() => {
          if (first) opened.resolve()
          first = false
        })
      } catch (e) {
        if (this.stopped) break
        if (first) {
          opened.reject(e)
          return
        }
        this.receiver.error(`reconnect: ${(e as Error).message}`)
        await Bun.sleep(500)
      }
      if (!this.stopped) this.reconnects++
    }
  }

  private async once(onOpen: () => void) {
    const ac = new AbortController()
    this.abort = ac
    const url = `${this.base()}/sse?v=1.2&channels=${this.receiver.channels.map(encodeURIComponent).join(',')}`
    const headers: Record<string, string> = { authorization: `Basic ${btoa(this.key)}` }
    if (this.lastId) headers['last-event-id'] = this.lastId
    let res: Response
    try {
      res = await fetch(url, { headers, signal: ac.signal })
    } catch (e) {
      if (ac.signal.aborted) return
      throw e
    }
    if (res.status !== 200) throw new Error(`status ${res.status}: ${(await res.text()).slice(0, 200)}`)
    onOpen()
    const [min, max] = this.lifeMs
    this.cutTimer = setTimeout(() => ac.abort(), min + Math.random() * (max - min))
    const decoder = new TextDecoder()
    let buf = ''
    try {
      for await (const chunk of res.body!) {
        buf += decoder.decode(chunk as Uint8Array, { stream: true })
        let end: number
        while ((end = buf.indexOf('\n\n')) >= 0) {
          this.record(buf.slice(0, end))
          buf = buf.slice(end + 2)
        }
      }
      if (!ac.signal.aborted) this.receiver.error('the server ended the stream')
    } catch (e) {
      if (!ac.signal.aborted) throw e
    } finally {
      clearTimeout(this.cutTimer)
    }
  }

  /** One record: `id:`, `event:`, `data:` lines. */
  private record(text: string) {
    let id: string | undefined
    let event = 'message'
    let data = ''
    for (const line of text.split('\n')) {
      if (line.startsWith('id: ')) id = line.slice(4)
      else if (line.startsWith('event: ')) event = line.slice(7)
      else if (line.startsWith('data: ')) data += line.slice(6)
    }
    if (id) this.lastId = id
    if (!data) return // a keepalive or comment
    if (event === 'message') {
      const m = JSON.parse(data) as { channel: string; data: unknown }
      this.receiver.receive(m.channel, m.data)
    } else if (event === 'error') this.receiver.error(`error event: ${data.slice(0, 200)}`)
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.cutTimer)
    this.abort?.abort()
    await this.running
  }
}
