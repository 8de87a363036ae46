/**
 * A small client of the realtime protocol (version 6) for the benchmark processes: the official
 * `ably` client is too heavy to drive a thousand sockets from one process on this machine, so
 * this one speaks just what it speaks, in its default format (msgpack, plain maps): connect
 * (`GET /?key=…&format=msgpack&heartbeats=false&v=6` upgraded to a WebSocket, then CONNECTED),
 * ATTACH and ATTACHED (with the presence SYNC that may follow), MESSAGE publishes numbered by
 * `msgSerial` and answered by ACK/NACK (`count` = protocol messages, `res` one entry each),
 * PRESENCE enter, CLOSE. Bun's WebSocket client; the server's pings are answered by it.
 * bench/realtime-client.test.ts checks it against the official client.
 *
 * Delivered MESSAGE frames are handed over as bytes (`onMessageFrame`), for a scanning reader
 * (realtime-frames.ts); every other frame is decoded with msgpackr.
 */
import { Packr } from 'msgpackr'
import { PendingAnswers } from './realtime-answers'
import { frameAction } from './realtime-frames'
import { SyncPages } from './realtime-sync'
import {
  Action,
  connectUrl,
  describeError,
  Flag,
  type Answer,
  type Attached,
  type ServerMessage,
} from './realtime-wire'

export * from './realtime-wire'

const packr = new Packr({ useRecords: false })
const unpackr = new Packr({ useRecords: false, mapsAsObjects: true })

export interface RealtimeOptions {
  /** http://host:port of the gateway (the WebSocket is on its root path). */
  base: string
  key: string
  clientId?: string
  /** Transport params of the connect request (e.g. `appendRollupWindow`). */
  params?: Record<string, string>
  connectTimeoutMs?: number
  /** A MESSAGE frame delivered on an attached channel, as received. */
  onMessageFrame?: (frame: Uint8Array) => void
  /** A PRESENCE frame delivered on an attached channel. */
  onPresence?: (pm: ServerMessage) => void
  /** The connection ended without our asking: DISCONNECTED, ERROR, or the socket closed. */
  onLost?: (why: string) => void
  /** A protocol fault (an answer for nothing pending, an unreadable frame, a malformed SYNC). */
  onFault?: (why: string) => void
}

export class RealtimeClient {
  connectionId = ''
  details: Record<string, unknown> = {}
  /** Bytes and frames received, per action. */
  readonly bytesIn = new Float64Array(32)
  readonly framesIn = new Float64Array(32)
  /** Protocol faults seen (an answer for nothing pending, a malformed frame); the first few explained. */
  faults = 0
  faultSamples: string[] = []
  private ws!: WebSocket
  private nextSerial = 0
  private readonly pending = new PendingAnswers()
  private attaching = new Map<string, { resolve: (a: Attached) => void; reject: (e: Error) => void }>()
  private readonly syncs = new SyncPages()
  private closing?: () => void
  private ended = false

  private constructor(private readonly o: RealtimeOptions) {}

  /** Opens the connection; resolves on CONNECTED, rejects on ERROR, a close or the timeout. */
  static connect(o: RealtimeOptions): Promise<RealtimeClient> {
    const c = new RealtimeClient(o)
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(new Error(`no CONNECTED within ${o.connectTimeoutMs ?? 30_000} ms`))
        c.terminate()
      }, o.connectTimeoutMs ?? 30_000)
      c.onConnected = (err) => {
        clearTimeout(timer)
        if (err) reject(err)
        else resolve(c)
      }
      c.ws = new WebSocket(connectUrl(o))
      // Bun: frames as Buffers, no ArrayBuffer to wrap (not in the DOM typings)
      c.ws.binaryType = 'nodebuffer' as BinaryType
      c.ws.onmessage = (e) => c.frame(e.data as Buffer)
      c.ws.onclose = (e) => c.closed(`socket closed (${e.code}${e.reason ? ` ${e.reason}` : ''})`)
      c.ws.onerror = () => c.closed('socket error')
    })
  }

  private onConnected?: (err?: Error) => void

  /** CONNECTED and not ended since. */
  get open(): boolean {
    return this.connectionId !== '' && !this.ended
  }

  get pendingCount(): number {
    return this.pending.count
  }

  /** ATTACH; resolves on ATTACHED (with the SYNC to come when it says HAS_PRESENCE), rejects on a channel ERROR. */
  attach(channel: string, o: { flags?: number; params?: Record<string, string> } = {}): Promise<Attached> {
    return new Promise((resolve, reject) => {
      this.attaching.set(channel, { resolve, reject })
      this.send({
        action: Action.ATTACH,
        channel,
        ...(o.flags ? { flags: o.flags } : {}),
        ...(o.params ? { params: o.params } : {}),
      })
    })
  }

  /** One MESSAGE protocol message carrying `messages`; `answer` is called with its ACK or NACK. */
  publish(channel: string, messages: Array<Record<string, unknown>>, answer: Answer): void {
    const msgSerial = this.nextSerial++
    this.pending.add(msgSerial, answer)
    this.send({ action: Action.MESSAGE, channel, msgSerial, messages })
  }

  /** PRESENCE enter (as `clientId` when given: enterClient); resolves with the ACK's serial. */
  enter(channel: string, data: unknown, clientId?: string): Promise<Array<string | null>> {
    return new Promise((resolve, reject) => {
      const msgSerial = this.nextSerial++
      this.pending.add(msgSerial, (err, serials) =>
        err ? reject(new Error(`enter refused: ${describeError(err)}`)) : resolve(serials!),
      )
      const member = { action: 2, data, ...(clientId !== undefined ? { clientId } : {}) }
      this.send({ action: Action.PRESENCE, channel, msgSerial, presence: [member] })
    })
  }

  /** CLOSE, then waits for CLOSED and the socket's end (or `timeoutMs`). */
  close(timeoutMs = 5000): Promise<void> {
    if (this.ended) return Promise.resolve()
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.terminate()
        resolve()
      }, timeoutMs)
      this.closing = () => {
        clearTimeout(timer)
        resolve()
      }
      this.send({ action: Action.CLOSE })
    })
  }

  /** Ends the socket without a goodbye (the server keeps the connection for a resume). */
  terminate(): void {
    this.ended = true
    try {
      this.ws?.close()
    } catch {
      /* not open yet */
    }
  }

  private send(pm: object): void {
    this.ws.send(packr.pack(pm) as Uint8Array<ArrayBuffer>)
  }

  private faultIf(msg: string | undefined): void {
    if (msg !== undefined) this.fault(msg)
  }

  private fault(msg: string): void {
    this.faults++
    if (this.faultSamples.length < 5) this.faultSamples.push(msg)
    this.o.onFault?.(msg)
  }

  private frame(bytes: Uint8Array): void {
    let action: number
    try {
      action = frameAction(bytes)
    } catch (e) {
      return this.fault(`unreadable frame: ${(e as Error).message}`)
    }
    if (action >= 0 && action < 32) {
      this.bytesIn[action]! += bytes.byteLength
      this.framesIn[action]!++
    }
    if (action === Action.MESSAGE && this.o.onMessageFrame) return this.o.onMessageFrame(bytes)
    let pm: ServerMessage
    try {
      pm = unpackr.unpack(bytes) as ServerMessage
    } catch (e) {
      return this.fault(`undecodable frame: ${(e as Error).message}`)
    }
    this.handle(pm, bytes.byteLength)
  }

  private handle(pm: ServerMessage, size: number): void {
    switch (pm.action) {
      case Action.CONNECTED:
        this.connectionId = pm.connectionId ?? ''
        this.details = pm.connectionDetails ?? {}
        this.onConnected?.(pm.error ? new Error(`CONNECTED with error ${describeError(pm.error)}`) : undefined)
        this.onConnected = undefined
        return
      case Action.ACK:
      case Action.NACK:
        return this.faultIf(this.pending.settle(pm))
      case Action.ATTACHED: {
        const a = this.attaching.get(pm.channel ?? '')
        if (!a) return // an update of an attached channel
        this.attaching.delete(pm.channel!)
        const flags = pm.flags ?? 0
        const attached: Attached = { flags, channelSerial: pm.channelSerial, error: pm.error }
        if (flags & Flag.HAS_PRESENCE) attached.sync = this.syncs.expect(pm.channel!)
        return a.resolve(attached)
      }
      case Action.SYNC:
        return this.faultIf(this.syncs.page(pm, size))
      case Action.PRESENCE:
        return this.o.onPresence?.(pm)
      case Action.MESSAGE:
        return
      case Action.ERROR: {
        const a = pm.channel !== undefined ? this.attaching.get(pm.channel) : undefined
        if (a) {
          this.attaching.delete(pm.channel!)
          return a.reject(new Error(`ATTACH ${pm.channel} refused: ${describeError(pm.error)}`))
        }
        if (pm.channel !== undefined) return this.lost(`channel ${pm.channel} failed: ${describeError(pm.error)}`)
        this.onConnected?.(new Error(`connection refused: ${describeError(pm.error)}`))
        this.onConnected = undefined
        return this.lost(`connection failed: ${describeError(pm.error)}`)
      }
      case Action.DISCONNECTED:
        return this.lost(`DISCONNECTED: ${describeError(pm.error)}`)
      case Action.CLOSED:
        this.ended = true
        this.closing?.()
        return
    }
  }

  private lost(why: string): void {
    if (this.ended) return
    this.ended = true
    this.o.onLost?.(why)
  }

  private closed(why: string): void {
    this.onConnected?.(new Error(`${why} before CONNECTED`))
    this.onConnected = undefined
    for (const a of this.attaching.values()) a.reject(new Error(`${why} while attaching`))
    this.attaching.clear()
    if (this.closing) return this.closing()
    this.lost(why)
  }
}
