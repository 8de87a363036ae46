import type { ErrorBody } from '../../errors'
import { Action } from './protocol'

/** The answer of one protocol message, settled with `ack` or `nack`. */
export interface AckSlot {
  msgSerial: number
  done: boolean
  serials?: Array<string | null>
  error?: ErrorBody
}

/** Outcomes remembered per connection, so a protocol message resent after a resume is answered, not published twice. */
const REMEMBERED = 256

/**
 * What a connection knows of its publishes, kept across a resume on the same node (the new
 * transport adopts the very same object, so publishes the old one started are recorded in it).
 */
export interface PublishMemory {
  /** Serials of the last REMEMBERED msgSerials acknowledged. */
  answered: Map<number, Array<string | null>>
  /** Publishes still in the broker: a resend of one waits for its outcome instead of publishing again. */
  inflight: Map<number, Promise<Array<string | null>>>
}

/**
 * The ACK/NACK queue of one connection. Protocol messages that need an answer (MESSAGE,
 * PRESENCE) are answered in the order they arrived, whatever order their publishes complete in:
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

  constructor(private readonly send: (pm: object) => void) {}

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

  get memory(): PublishMemory {
    return (this.remembered ??= { answered: new Map(), inflight: new Map() })
  }

  /**
   * The serials a msgSerial was acknowledged with, or the outcome of its publish still in the
   * broker, if this connection sent it before (a resend after a resume); undefined otherwise.
   */
  earlier(msgSerial: number): Array<string | null> | Promise<Array<string | null>> | undefined {
    return this.remembered?.answered.get(msgSerial) ?? this.remembered?.inflight.get(msgSerial)
  }

  /** A publish of `msgSerial` is in the broker until `outcome` settles. */
  track(msgSerial: number, outcome: Promise<Array<string | null>>): void {
    const { inflight } = this.memory
    inflight.set(msgSerial, outcome)
    const untrack = () => {
      if (inflight.get(msgSerial) === outcome) inflight.delete(msgSerial)
    }
    outcome.then(untrack, untrack)
  }

  /** A slot for the next protocol message; settle it with `ack` or `nack`. */
  open(msgSerial: number): AckSlot {
    const slot: AckSlot = { msgSerial, done: false }
    this.slots.push(slot)
    return slot
  }

  ack(slot: AckSlot, serials: Array<string | null>): void {
    slot.serials = serials
    slot.done = true
    this.schedule()
  }

  nack(slot: AckSlot, error: ErrorBody): void {
    slot.error = error
    slot.done = true
    this.schedule()
  }

  /**
   * Answers go out once per event-loop turn: the protocol messages a client sent together are
   * mostly settled in the same turn, and one ACK (one frame, one socket write) answers all of them.
   */
  private schedule() {
    if (this.scheduled) return
    this.scheduled = true
    setImmediate(() => {
      this.scheduled = false
      this.flush()
    })
  }

  private flush() {
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
      for (const s of run) this.remember(s.msgSerial, s.serials!)
      this.send({
        action: Action.ACK,
        msgSerial: first.msgSerial,
        count: run.length,
        res: run.map((s) => ({ serials: s.serials })),
      })
    }
    if (this.slots.length === 0 && this.waiters?.length) for (const w of this.waiters.splice(0)) w()
  }

  private remember(msgSerial: number, serials: Array<string | null>) {
    const { answered } = this.memory
    answered.set(msgSerial, serials)
    if (answered.size > REMEMBERED) answered.delete(answered.keys().next().value!)
  }
}
