import { GatewayError } from '../../errors'
import { utf8Encode } from '../../lib/encoding'
import { metrics } from '../../lib/metrics'
import type { SessionSink, StreamSession } from '../../core/fanout/session'
import type { Message } from '../../core/types'
import { compactSerial, encodeEventId } from './event-id'
import { errorRecord, keepaliveBytes, messageRecord, payloads, type StreamMode } from './format'

export interface ConnectionOptions {
  mode: StreamMode
  enveloped: boolean
  heartbeats: boolean
  channels: string[]
  hash: string
  /** Bytes that may wait unsent for this client; beyond it the client is cut (slow consumer). */
  budget: number
  onClose: (c: EventStreamConnection) => void
}

/**
 * Records of a whole batch for single-channel streams, keyed by the shared batch array: every
 * connection of that channel and variant writes the very same text. The first connection writes
 * the string (Bun encodes it into the socket: no byte array for the common single subscriber);
 * from the second on, the text is encoded once and the bytes are shared.
 */
const shared = new WeakMap<Message[], Map<string, SharedRecords>>()
interface SharedRecords { text: string; last: string; bytes?: Uint8Array; written: boolean }

type Chunk = string | Uint8Array

const delivered = metrics.counter('gateway_messages_delivered_total', 'Messages written to event-stream connections.')
const cut = metrics.counter('gateway_sse_slow_consumers_cut_total', 'Event-stream connections cut for not reading fast enough.')

/**
 * One event-stream response: turns session output into records and watches the byte budget.
 * The body is a Bun "direct" stream: writes go straight to the socket (no queue of chunks, about
 * half the memory per connection of a default stream); when the socket's buffer is full a write
 * reports it, and bytes written past that point count against the budget until it drains.
 */
export class EventStreamConnection implements SessionSink {
  readonly stream: ReadableStream<Uint8Array>
  session?: StreamSession
  private controller?: ReadableStreamDirectController
  /** Records written before the response started streaming (replay racing the response). */
  private early?: Chunk[]
  private release?: () => void
  private closed = false
  /** Bytes written since the socket's buffer filled up; reset when it drains. */
  private backlog = 0
  private draining = false
  private readonly parts: string[]
  /** Key of this connection's record text among the connections of its channel. */
  private readonly variant: string

  constructor(private readonly o: ConnectionOptions) {
    this.parts = o.channels.map(() => '0')
    this.variant = `${o.mode}${o.enveloped ? 1 : 0}${o.hash}`
    this.stream = new ReadableStream({
      type: 'direct',
      pull: (c: ReadableStreamDirectController) => {
        if (this.closed) return c.close()
        this.controller = c
        // Bun sends the response head only with the first body bytes: open with a keepalive
        c.write(keepaliveBytes(o.mode, false))
        const early = this.early ?? []
        this.early = undefined
        for (const b of early) this.write(b)
        c.flush()
        return new Promise<void>((resolve) => { this.release = resolve })
      },
      cancel: () => this.shutdown(),
    } as unknown as UnderlyingDefaultSource<Uint8Array>)
  }

  begin(positions: string[]): void {
    positions.forEach((p, i) => { this.parts[i] = compactSerial(p) })
  }

  deliver(index: number, batch: Message[]): void {
    if (this.closed) return
    delivered.inc(undefined, batch.length)
    const { mode, enveloped, channels, hash } = this.o
    const channel = channels[index]!
    if (channels.length === 1) {
      // the whole text is the same for every connection of this channel and variant
      let byVariant = shared.get(batch)
      if (!byVariant) shared.set(batch, (byVariant = new Map()))
      let done = byVariant.get(this.variant)
      if (!done) {
        const data = payloads(batch, channel, mode, enveloped)
        let text = ''
        let last = ''
        for (let i = 0; i < batch.length; i++) {
          last = compactSerial(batch[i]!.serial)
          text += messageRecord(mode, `${hash}:${last}`, data[i]!)
        }
        byVariant.set(this.variant, (done = { text, last, written: false }))
      }
      this.parts[0] = done.last
      this.write(done.bytes ?? (done.written ? (done.bytes = utf8Encode(done.text)) : done.text))
      done.written = true
      return
    }
    const data = payloads(batch, channel, mode, enveloped)
    let text = ''
    for (let i = 0; i < batch.length; i++) {
      this.parts[index] = compactSerial(batch[i]!.serial)
      text += messageRecord(mode, encodeEventId(hash, this.parts), data[i]!)
    }
    this.write(text)
  }

  notice(err: GatewayError): void {
    this.write(errorRecord(this.o.mode, err.toBody()))
  }

  end(err: GatewayError): void {
    if (this.closed) return
    this.notice(err)
    this.close()
  }

  keepalive(): void {
    this.write(keepaliveBytes(this.o.mode, this.o.heartbeats))
  }

  /** Server-side close (token expiry, shutdown, slow consumer). */
  close(): void {
    if (this.closed) return
    try { this.controller?.close() } catch { /* already closed by the client */ }
    this.release?.()
    this.shutdown()
  }

  private write(chunk: Chunk) {
    if (this.closed) return
    const c = this.controller
    if (!c) {
      (this.early ??= []).push(chunk)
      return
    }
    let r: number | Promise<number>
    try {
      r = c.write(chunk)
      c.flush()
    } catch {
      this.shutdown()
      return
    }
    if (!(r instanceof Promise)) return
    this.backlog += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength
    if (!this.draining) {
      this.draining = true
      r.then(() => { this.backlog = 0; this.draining = false }, () => {})
    }
    if (this.backlog > this.o.budget) {
      // the client does not read fast enough: tell it (the record waits behind the backlog) and cut it
      cut.inc()
      const err = new GatewayError(80020, `Subscriber too slow: more than ${this.o.budget} bytes waiting`)
      try { c.write(errorRecord(this.o.mode, err.toBody())) } catch { /* closed */ }
      this.close()
    }
  }

  private shutdown() {
    if (this.closed) return
    this.closed = true
    this.session?.close()
    this.o.onClose(this)
  }
}
