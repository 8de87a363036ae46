import type { ErrorBody } from '../../errors'
import type { Timers } from '../../lib/clock'
import { latencyNow } from '../../lib/metrics'
import { ackLatency, ackSeries, arrival } from './metrics'
import { Action } from './protocol'

/** The answer of one protocol message, settled with `ack` or `nack`. */
export interface AckSlot {
  msgSerial: number
  done: boolean
  /** Remembered for resend (operations.ts): its outcome answers a resend of its msgSerial after a resume. */
  remembered: boolean
  serials?: Array<string | null>
  error?: ErrorBody
  /** Called once it is settled (set when a newer transport of the connection waits for its outcome). */
  onSettled?: () => void
  /** When it arrived (ms, `latencyNow()`, read once per turn): for the ACK latency. */
  at: number
}

/** Outcomes remembered per connection, so a protocol message resent after a resume is answered, not published twice. */
const REMEMBERED = 256

/**
 * The serials of the last REMEMBERED msgSerials acknowledged, each in the place of its msgSerial
 * modulo REMEMBERED: msgSerials count up one by one, so that is the newest REMEMBERED of them,
 * kept without a map entry or an allocation per answer.
 */
export class Answered {
  private readonly msgSerials = new Float64Array(REMEMBERED).fill(-1)
  private readonly serials: Array<Array<string | null> | undefined> = new Array(REMEMBERED)

  get(msgSerial: number): Array<string | null> | undefined {
    const i = msgSerial % REMEMBERED
    return this.msgSerials[i] === msgSerial ? this.serials[i] : undefined
  }

  set(msgSerial: number, serials: Array<string | null>): void {
    const i = msgSerial % REMEMBERED
    this.msgSerials[i] = msgSerial
    this.serials[i] = serials
  }
}

/**
 * What a connection knows of its publishes, kept across a resume on the same node (the new
 * transport adopts the very same object, so publishes the old one started are recorded in it).
 */
export interface PublishMemory {
  answered: Answered
  /**
   * Publishes an earlier transport left in the broker (filled when it is handed over): a resend of
   * one waits for its outcome instead of publishing again.
   */
  inflight: Map<number, Promise<AckSlot>>
}

/**
 * The ACK/NACK queue of one connection. Protocol messages that need an answer (MESSAGE,
 * PRESENCE, ANNOTATION, OBJECT) are answered in the order they arrived, whatever order their publishes complete in:
 * the client matches answers from the head of its queue by msgSerial, so an answer out of order
 * would complete the wrong messages. Consecutive successes are merged into one ACK; `count`
 * counts protocol messages, and `res` holds one entry per protocol message.
 */
export class AckQueue {
  private slots: AckSlot[] = []
  /** Made on the first publish: an idle connection holds none (memory per connection counts). */
  private remembered?: PublishMemory
  private waiters?: Array<() => void>
  private scheduled = false
  private flushSoon?: () => void

  constructor(
    private readonly send: (pm: object) => void,
    private readonly timers: Timers,
  ) {}

  get pending(): number {
    return this.slots.length
  }

  /** Resolves once every protocol message received so far has been answered. */
  settled(): Promise<void> {
    if (this.slots.length === 0) return Promise.resolve()
    return new Promise((resolve) => (this.waiters ??= []).push(resolve))
  }

  /** What the connection knew of its publishes before a resume (on the same node). */
  adopt(memory: PublishMemory): void {
    this.remembered = memory
  }

  private get memory(): PublishMemory {
    return (this.remembered ??= { answered: new Answered(), inflight: new Map() })
  }

  /**
   * What this transport knows of its publishes, for the one that resumes the connection: what
   * was answered, and the outcomes of the publishes still in the broker (which go on being
   * recorded in it as they settle).
   */
  handOver(): PublishMemory {
    const memory = this.memory
    for (const slot of this.slots) {
      if (!slot.remembered || slot.done || slot.onSettled) continue // handed over already: its outcome is in `inflight`
      const outcome = new Promise<AckSlot>((resolve) => (slot.onSettled = () => resolve(slot)))
      memory.inflight.set(slot.msgSerial, outcome)
      void outcome.then(() => {
        if (memory.inflight.get(slot.msgSerial) === outcome) memory.inflight.delete(slot.msgSerial)
      })
    }
    return memory
  }

  /**
   * The serials a msgSerial was acknowledged with, or the outcome of its publish an earlier
   * transport left in the broker, if this connection sent it before (a resend after a resume);
   * undefined otherwise.
   */
  earlier(msgSerial: number): Array<string | null> | Promise<AckSlot> | undefined {
    const r = this.remembered
    return r && (r.answered.get(msgSerial) ?? r.inflight.get(msgSerial))
  }

  /** A slot for the next protocol message (`remembered`: its outcome answers a resend); settle it with `ack` or `nack`. */
  open(msgSerial: number, remembered: boolean): AckSlot {
    const slot: AckSlot = { msgSerial, done: false, remembered, at: arrival(this.timers) }
    this.slots.push(slot)
    return slot
  }

  ack(slot: AckSlot, serials: Array<string | null>): void {
    slot.serials = serials
    this.settle(slot)
  }

  nack(slot: AckSlot, error: ErrorBody): void {
    slot.error = error
    this.settle(slot)
  }

  private settle(slot: AckSlot) {
    slot.done = true
    slot.onSettled?.()
    this.schedule()
  }

  /**
   * Answers go out once per event-loop turn: the protocol messages a client sent together are
   * mostly settled in the same turn, and one ACK (one frame, one socket write) answers all of them.
   */
  private schedule() {
    if (this.scheduled) return
    this.scheduled = true
    // one callback per connection, made on its first answer (not one per turn; an idle connection has none)
    this.timers.soon(
      (this.flushSoon ??= () => {
        this.scheduled = false
        this.flush()
      }),
    )
  }

  private flush() {
    let now = 0
    while (this.slots.length && this.slots[0]!.done) {
      const first = this.slots.shift()!
      if (first.error) {
        this.send({ action: Action.NACK, msgSerial: first.msgSerial, count: 1, error: first.error })
        continue
      }
      const run = [first]
      while (
        this.slots.length &&
        this.slots[0]!.done &&
        !this.slots[0]!.error &&
        this.slots[0]!.msgSerial === run[run.length - 1]!.msgSerial + 1
      )
        run.push(this.slots.shift()!)
      const { answered } = this.memory
      now ||= latencyNow()
      const res: Array<{ serials?: Array<string | null> }> = []
      for (const s of run) {
        if (s.remembered) answered.set(s.msgSerial, s.serials!)
        ackLatency.observeIn(ackSeries, (now - s.at) / 1000)
        res.push({ serials: s.serials })
      }
      this.send({ action: Action.ACK, msgSerial: first.msgSerial, count: run.length, res })
    }
    if (this.slots.length === 0 && this.waiters?.length) for (const w of this.waiters.splice(0)) w()
  }
}
