import { connect, type Socket } from 'node:net'
import type { SseEvent } from './sse'

/**
 * An event-stream reader on a raw socket, so a test controls when bytes are read (`pause` lets
 * the kernel buffers and then the server fill up, as a stalled browser tab does). Parses the HTTP
 * response head, chunked transfer encoding and SSE records.
 */
export class RawSseReader {
  readonly events: SseEvent[] = []
  status = 0
  ended = false
  private readonly socket: Socket
  private raw = Buffer.alloc(0)
  private headDone = false
  private body = ''
  private waiters = new Set<() => void>()

  constructor(port: number, path: string, headers: Record<string, string> = {}) {
    this.socket = connect(port, '127.0.0.1')
    const head = Object.entries({ host: 'x', ...headers })
      .map(([k, v]) => `${k}: ${v}\r\n`)
      .join('')
    this.socket.write(`GET ${path} HTTP/1.1\r\n${head}\r\n`)
    this.socket.on('data', (b: Buffer) => this.onData(b))
    this.socket.on('close', () => {
      this.ended = true
      this.wake()
    })
    this.socket.on('error', () => {})
  }

  pause() {
    this.socket.pause()
  }

  resume() {
    this.socket.resume()
  }

  close() {
    this.socket.destroy()
  }

  /** Resolves when `pred` holds (or the stream ended); rejects after `ms`. */
  until(pred: (events: SseEvent[]) => boolean, ms = 20_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const check = () => {
        if (pred(this.events) || this.ended) {
          this.waiters.delete(check)
          clearTimeout(timer)
          resolve()
        }
      }
      const timer = setTimeout(() => {
        this.waiters.delete(check)
        reject(new Error(`timed out with ${this.events.length} events`))
      }, ms)
      this.waiters.add(check)
      check()
    })
  }

  private wake() {
    for (const w of [...this.waiters]) w()
  }

  private onData(b: Buffer) {
    this.raw = Buffer.concat([this.raw, b])
    if (!this.headDone) {
      const end = this.raw.indexOf('\r\n\r\n')
      if (end < 0) return
      this.status = Number(this.raw.subarray(0, end).toString('latin1').split(' ')[1])
      this.raw = this.raw.subarray(end + 4)
      this.headDone = true
    }
    // chunked transfer encoding: <hex size>\r\n<bytes>\r\n ...
    for (;;) {
      const nl = this.raw.indexOf('\r\n')
      if (nl < 0) break
      const size = parseInt(this.raw.subarray(0, nl).toString('latin1'), 16)
      if (this.raw.length < nl + 2 + size + 2) break
      this.body += this.raw.subarray(nl + 2, nl + 2 + size).toString('utf8')
      this.raw = this.raw.subarray(nl + 2 + size + 2)
      if (size === 0) this.ended = true
    }
    let sep: number
    while ((sep = this.body.indexOf('\n\n')) >= 0) {
      const record = this.body.slice(0, sep)
      this.body = this.body.slice(sep + 2)
      const e: SseEvent = { event: 'message', data: '' }
      const data: string[] = []
      for (const line of record.split('\n')) {
        if (line === '' || line.startsWith(':')) continue
        const c = line.indexOf(':')
        const field = c < 0 ? line : line.slice(0, c)
        const value = c < 0 ? '' : line.slice(c + 1).replace(/^ /, '')
        if (field === 'id') e.id = value
        else if (field === 'event') e.event = value
        else if (field === 'data') data.push(value)
      }
      if (!data.length && !e.id) continue
      e.data = data.join('\n')
      this.events.push(e)
    }
    this.wake()
  }
}
