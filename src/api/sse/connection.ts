import { GatewayError } from '../../errors'
import { utf8Encode } from '../../lib/encoding'
import { deliveredBy, metrics } from '../../lib/metrics'
import { RecentMemo } from '../../lib/recent-memo'
import type { SessionSink, StreamSession } from '../../core/fanout/session'
import type { Message } from '../../core/types'
import type { DeltaStage } from '../../core/fanout/delta-stage'
import { compactSerial, encodeEventId } from '../../core/fanout/resume-token'
import { entryRecord, errorRecord, keepaliveBytes, payloads, streamed, type StreamMode } from './format'

export interface ConnectionOptions {
  mode: StreamMode
  enveloped: boolean
  heartbeats: boolean
  channels: string[]
  hash: string
  /** Bytes that may wait unsent for this client; beyond it the session pauses until they drain. */
  budget: number
  /** A client that reads nothing for this long (ms) while bytes wait is cut (80020). */
  stallMs: number
  now: () => number
  onClose: (c: EventStreamConnection) => void
  /** Per channel, its delta stage when it asked for deltas (`[?delta=vcdiff]`); absent when none did. */
  deltas?: Array<DeltaStage | undefined>
}

/**
 * Records of a whole batch for single-channel streams, kept by the shared batch array: every
 * connection of that channel and variant writes the very same text. The first connection writes
 * the string (Bun encodes it into the socket: no byte array for the common single subscriber);
 * from the second on, the text is encoded once and the bytes are shared. A batch's variants are
 * a chain (nearly always of one).
 */
const shared = new RecentMemo<Message[], SharedRecords>()
interface SharedRecords {
  variant: string
  text: string
  last: string
  bytes?: Uint8Array
  written: boolean
  /** The batch's records of another variant. */
  other?: SharedRecords
}

type Chunk = string | Uint8Array

const delivered = deliveredBy('event-stream')
const cut = metrics.counter(
  'gateway_sse_slow_consumers_cut_total',
  'Event-stream connections cut for not reading fast enough (stalled, or fell behind retention).',
)
const paused = metrics.counter(
  'gateway_sse_slow_consumers_paused_total',
  'Times an event-stream connection was paused for unsent bytes over SSE_BUFFER_BYTES (it catches up from the log).',
)

/**
 * One event-stream response: turns session output into records and watches the byte budget.
 * The body is a Bun "direct" stream: writes go straight to the socket (no queue of chunks, about
 * half the memory per connection of a default stream); when the socket's buffer is full a write
 * reports it, and bytes written past that point count against the budget until it drains. Over
 * the budget the session pauses (its backlog becomes a position in the channel's log) and
 * catches up once the socket drains; a client that reads nothing for `stallMs` is cut.
 */
export class EventStreamConnection implements SessionSink {
  readonly stream: ReadableStream<Uint8Array>
  session?: StreamSession
  private controller?: ReadableStreamDirectController
  /** Records written before the response started streaming (replay racing the response). */
  private early?: Chunk[]
  private earlyBytes = 0
  private release?: () => void
  private closed = false
  /** Bytes written since the socket's buffer filled up; reset when it drains. */
  private backlog = 0
  private draining = false
  /** When the socket's buffer last filled up (ms), while it has not drained. */
  private drainingSince = 0
  /** The session was told the budget is spent: it waits for `drained()`. */
  private paused = false
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
        if (this.paused && !this.draining) this.resumeSession()
        return new Promise<void>((resolve) => {
          this.release = resolve
        })
      },
      cancel: () => this.shutdown(),
    } as unknown as UnderlyingDefaultSource<Uint8Array>)
  }

  begin(positions: string[]): void {
    positions.forEach((p, i) => {
      this.parts[i] = compactSerial(p)
    })
  }

  deliver(index: number, all: Message[]): boolean {
    if (this.closed) return true
    const entries = streamed(all)
    const stage = this.o.deltas?.[index]
    const batch = stage ? stage.apply(entries) : entries
    if (!batch.length) return true
    delivered.value += batch.length
    const { mode, enveloped, channels, hash } = this.o
    const channel = channels[index]!
    if (channels.length === 1) {
      // the whole text is the same for every connection of this channel and variant
      const first = shared.get(batch)
      let done = first
      while (done && done.variant !== this.variant) done = done.other
      if (!done) {
        const data = payloads(batch, channel, mode, enveloped)
        let text = ''
        let last = ''
        for (let i = 0; i < batch.length; i++) {
          last = compactSerial(batch[i]!.serial)
          text += entryRecord(mode, `${hash}:${last}`, batch[i]!, data[i]!)
        }
        done = { variant: this.variant, text, last, written: false, other: undefined }
        if (first) {
          done.other = first.other
          first.other = done
        } else shared.set(batch, done)
      }
      if (!done.text) return true
      this.parts[0] = done.last
      const more = this.write(done.bytes ?? (done.written ? (done.bytes = utf8Encode(done.text)) : done.text))
      done.written = true
      return more
    }
    const data = payloads(batch, channel, mode, enveloped)
    let text = ''
    for (let i = 0; i < batch.length; i++) {
      this.parts[index] = compactSerial(batch[i]!.serial)
      text += entryRecord(mode, encodeEventId(hash, this.parts), batch[i]!, data[i]!)
    }
    return text ? this.write(text) : true
  }

  notice(err: GatewayError): void {
    this.write(errorRecord(this.o.mode, err.toBody()))
  }

  private resumeSession() {
    this.paused = false
    void this.session?.drained()
  }

  end(err: GatewayError): void {
    if (this.closed) return
    if (err.code === 80020) cut.inc()
    this.notice(err)
    this.close()
  }

  /** Called every keepalive interval: a keepalive when idle; a client stalled too long is cut. */
  keepalive(): void {
    if (!this.draining) {
      this.write(keepaliveBytes(this.o.mode, this.o.heartbeats))
    } else if (this.o.now() - this.drainingSince > this.o.stallMs) {
      this.end(new GatewayError(80020, `Subscriber too slow: nothing read for ${this.o.stallMs} ms`))
    }
  }

  /** Server-side close (token expiry, shutdown, slow consumer). */
  close(): void {
    if (this.closed) return
    try {
      this.controller?.close()
    } catch {
      /* already closed by the client */
    }
    this.release?.()
    this.shutdown()
  }

  /** Writes a record; false when the bytes waiting for this client are over the budget (pause). */
  private write(chunk: Chunk): boolean {
    if (this.closed) return true
    const size = () => (typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength)
    const c = this.controller
    if (!c) {
      ;(this.early ??= []).push(chunk)
      this.earlyBytes += size()
      return this.earlyBytes <= this.o.budget || !(this.paused = true)
    }
    let r: number | Promise<number>
    try {
      r = c.write(chunk)
      c.flush()
    } catch {
      this.shutdown()
      return true
    }
    if (!(r instanceof Promise)) return !this.paused
    this.backlog += size()
    if (!this.draining) {
      this.draining = true
      this.drainingSince = this.o.now()
      r.then(
        () => {
          this.backlog = 0
          this.draining = false
          if (this.paused && !this.closed) this.resumeSession()
        },
        () => {},
      )
    }
    if (this.backlog <= this.o.budget) return true
    if (!this.paused) paused.inc()
    this.paused = true
    return false
  }

  private shutdown() {
    if (this.closed) return
    this.closed = true
    this.session?.close()
    this.o.onClose(this)
  }
}
