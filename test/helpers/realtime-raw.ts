/**
 * A raw WebSocket client of the realtime protocol, for wire-level checks: JSON or msgpack frames,
 * no client library.
 */
import { pack, unpack } from 'msgpackr'

const raws = new Set<RawClient>()

/** Closes every RawClient made (realtime.ts closeClients, after each test). */
export function closeRawClients(): void {
  for (const r of raws) r.close()
  raws.clear()
}

/** The ws:// URL of a gateway's realtime endpoint with these query parameters. */
export function realtimeUrl(base: string, query: Record<string, string>): string {
  const url = new URL(base.replace(/^http/, 'ws'))
  url.pathname = '/'
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v)
  return url.toString()
}

/** A protocol message as a raw client sees it. */
export type Pm = Record<string, any> & { action: number }

/**
 * A raw WebSocket client of the realtime protocol (JSON or msgpack frames; no client library):
 * records every frame it receives, decoded, and whether and how the server closed the socket.
 */
export class RawClient {
  readonly frames: Pm[] = []
  /** Undecodable frames (should never happen). */
  readonly garbage: unknown[] = []
  readonly ws: WebSocket
  closed?: { code: number; reason: string }
  private readonly waiters = new Set<() => void>()
  readonly opened: Promise<void>

  constructor(
    url: string,
    readonly format: 'json' | 'msgpack' = 'json',
  ) {
    this.ws = new WebSocket(url)
    this.ws.binaryType = 'arraybuffer'
    raws.add(this)
    this.opened = new Promise((resolve, reject) => {
      this.ws.onopen = () => resolve()
      this.ws.onerror = () => reject(new Error('websocket error'))
    })
    this.ws.onmessage = (ev) => {
      try {
        this.frames.push(
          typeof ev.data === 'string' ? JSON.parse(ev.data) : (unpack(new Uint8Array(ev.data as ArrayBuffer)) as Pm),
        )
      } catch {
        this.garbage.push(ev.data)
      }
      this.wake()
    }
    this.ws.onclose = (ev) => {
      this.closed = { code: ev.code, reason: ev.reason }
      this.wake()
    }
  }

  private wake() {
    for (const w of [...this.waiters]) w()
  }

  /** Sends a protocol message in the client's format, or raw bytes/text as given. */
  send(pm: object | string | Uint8Array): void {
    if (typeof pm === 'string') return this.ws.send(pm)
    const bytes = pm instanceof Uint8Array ? pm : this.format === 'json' ? JSON.stringify(pm) : pack(pm)
    this.ws.send(typeof bytes === 'string' ? bytes : new Uint8Array(bytes))
  }

  /** The first received frame (from index `from`) matching `pred`; rejects after `ms`. */
  next(pred: (pm: Pm) => boolean, ms = 5000, from = 0): Promise<Pm> {
    return this.wait(() => this.frames.slice(from).find(pred), ms, `a frame matching ${pred}`)
  }

  /** Resolves when the server has closed the socket. */
  closing(ms = 5000): Promise<{ code: number; reason: string }> {
    return this.wait(() => this.closed, ms, 'the socket to close')
  }

  private wait<T>(found: () => T | undefined, ms: number, what: string): Promise<T> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const v = found()
        if (v === undefined) return
        this.waiters.delete(check)
        clearTimeout(timer)
        resolve(v)
      }
      const timer = setTimeout(() => {
        this.waiters.delete(check)
        reject(new Error(`waited ${ms} ms for ${what}; frames: ${JSON.stringify(this.frames).slice(0, 800)}`))
      }, ms)
      this.waiters.add(check)
      check()
    })
  }

  close(): void {
    this.ws.close()
  }
}

/** A raw client that is connected (its CONNECTED frame received). */
export async function rawConnected(
  base: string,
  query: Record<string, string>,
  format: 'json' | 'msgpack' = 'json',
): Promise<{ raw: RawClient; connected: Pm }> {
  const raw = new RawClient(realtimeUrl(base, { format, v: '6', ...query }), format)
  const connected = await raw.next((f) => f.action === 4 || f.action === 9)
  if (connected.action !== 4) throw new Error(`refused: ${JSON.stringify(connected)}`)
  return { raw, connected }
}
