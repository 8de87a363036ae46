import { GatewayError } from '../../errors'
import { utf8Encode } from '../../lib/encoding'
import { metrics } from '../../lib/metrics'
import type { SessionSink, StreamSession } from '../../core/fanout/session'
import type { Message } from '../../core/types'
import { compactSerial, encodeEventId } from './event-id'
import { errorRecord, keepaliveBytes, messageRecord, type StreamMode } from './format'

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
 * Bytes of a whole batch for single-channel streams, keyed by the shared batch array: every
 * connection of that channel and variant writes the very same bytes.
 */
const shared = new WeakMap<Message[], Map<string, { bytes: Uint8Array; last: string }>>()

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
  /** Bytes written before the response started streaming (replay racing the response). */
  private early?: Uint8Array[]
  private release?: () => void
  private closed = false
  /** Bytes written since the socket's buffer filled up; reset when it drains. */
  private backlog = 0
  private draining = false
  private readonly parts: string[]

  constructor(private readonly o: ConnectionOptions) {
    this.parts = o.channels.map(() => '0')
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
      const variant = `${mode}${enveloped ? 1 : 0}${hash}`
      let byVariant = shared.get(batch)
      if (!byVariant) shared.set(batch, (byVariant = new Map()))
      let done = byVariant.get(variant)
      if (!done) {
        let text = ''
        let last = ''
        for (const m of batch) {
          last = compactSerial(m.serial)
          text += messageRecord(mode, enveloped, `${hash}:${last}`, m, channel)
        }
        byVariant.set(variant, (done = { bytes: utf8Encode(text), last }))
      }
      this.parts[0] = done.last
      this.write(done.bytes)
      return
    }
    let text = ''
    for (const m of batch) {
      this.parts[index] = compactSerial(m.serial)
      text += messageRecord(mode, enveloped, encodeEventId(hash, this.parts), m, channel)
    }
    this.write(utf8Encode(text))
  }

  notice(err: GatewayError): void {
    this.write(utf8Encode(errorRecord(this.o.mode, err.toBody())))
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

  private write(bytes: Uint8Array) {
    if (this.closed) return
    const c = this.controller
    if (!c) {
      (this.early ??= []).push(bytes)
      return
    }
    let r: number | Promise<number>
    try {
      r = c.write(bytes)
      c.flush()
    } catch {
      this.shutdown()
      return
    }
    if (!(r instanceof Promise)) return
    this.backlog += bytes.byteLength
    if (!this.draining) {
      this.draining = true
      r.then(() => { this.backlog = 0; this.draining = false }, () => {})
    }
    if (this.backlog > this.o.budget) {
      // the client does not read fast enough: tell it (the record waits behind the backlog) and cut it
      cut.inc()
      const err = new GatewayError(80020, `Subscriber too slow: more than ${this.o.budget} bytes waiting`)
      try { c.write(utf8Encode(errorRecord(this.o.mode, err.toBody()))) } catch { /* closed */ }
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
