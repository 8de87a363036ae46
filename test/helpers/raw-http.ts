import { connect, type Socket } from 'node:net'

/**
 * A raw TCP connection to a server, for what an HTTP client library hides: bodies sent a byte at
 * a time, idle keep-alive connections, malformed request lines, and whether the server closed.
 */
export class RawConnection {
  private received = ''
  private ended = false
  private waiters: Array<() => void> = []
  readonly closed: Promise<void>

  private constructor(private readonly socket: Socket) {
    socket.on('data', (d) => {
      this.received += d.toString('latin1')
      this.wake()
    })
    this.closed = new Promise((resolve) =>
      socket.on('close', () => {
        this.ended = true
        this.wake()
        resolve()
      }),
    )
    socket.on('error', () => {})
  }

  static open(base: string): Promise<RawConnection> {
    const url = new URL(base)
    return new Promise((resolve, reject) => {
      const s = connect(Number(url.port), url.hostname, () => resolve(new RawConnection(s)))
      s.once('error', reject)
    })
  }

  private wake() {
    for (const w of this.waiters.splice(0)) w()
  }

  write(data: string | Uint8Array) {
    if (!this.ended) this.socket.write(data)
  }

  get isClosed() {
    return this.ended
  }

  get text() {
    return this.received
  }

  /** Waits until `done(received)` holds or the connection closes; false after `ms` without either. */
  async until(done: (received: string) => boolean, ms = 10_000): Promise<boolean> {
    const limit = Date.now() + ms
    while (!done(this.received) && !this.ended) {
      const left = limit - Date.now()
      if (left <= 0) return false
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left)
        this.waiters.push(() => {
          clearTimeout(t)
          resolve()
        })
      })
    }
    return true
  }

  /** The first complete response received (Content-Length framed), or undefined. */
  response(): RawResponse | undefined {
    return parseResponse(this.received)
  }

  close() {
    this.socket.destroy()
  }
}

export interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
}

export function parseResponse(text: string): RawResponse | undefined {
  const end = text.indexOf('\r\n\r\n')
  if (end === -1) return undefined
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n')
  const headers: Record<string, string> = {}
  for (const l of lines) {
    const i = l.indexOf(':')
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim()
  }
  const length = Number(headers['content-length'] ?? 0)
  const body = text.slice(end + 4, end + 4 + length)
  if (body.length < length) return undefined
  return { status: Number(statusLine!.split(' ')[1]), headers, body }
}
