/**
 * The client side of ACK/NACK: the protocol messages of one connection that await an answer,
 * oldest first. An ACK or NACK answers `count` of them from `msgSerial`, which must be the oldest
 * pending (the server answers in order; `res` holds one entry per protocol message). Anything
 * else (an answer for nothing pending, out of order, or an ACK whose `res` does not match) is a
 * protocol fault, as it would make the official client complete the wrong messages or throw.
 */
import { Action, type Answer, type ServerMessage } from './realtime-wire'

interface Pending {
  msgSerial: number
  answer: Answer
}

export class PendingAnswers {
  private pending: Pending[] = []
  private head = 0

  get count(): number {
    return this.pending.length - this.head
  }

  add(msgSerial: number, answer: Answer): void {
    this.pending.push({ msgSerial, answer })
  }

  /** Settles what an ACK or NACK answers; returns a fault's description, or undefined. */
  settle(pm: ServerMessage): string | undefined {
    const count = pm.count ?? 0
    const first = pm.msgSerial ?? -1
    const ack = pm.action === Action.ACK
    if (count < 1 || first !== this.pending[this.head]?.msgSerial || count > this.count)
      return `${ack ? 'ACK' : 'NACK'} msgSerial ${first} count ${count} with ${this.count} pending from ${this.pending[this.head]?.msgSerial}`
    const fault =
      ack && pm.res?.length !== count
        ? `ACK of ${count} protocol messages with ${pm.res?.length ?? 0} res entries`
        : undefined
    for (let i = 0; i < count; i++) {
      const p = this.pending[this.head++]!
      if (ack) p.answer(undefined, pm.res?.[i]?.serials ?? [])
      else p.answer(pm.error ?? { message: 'NACK without error' }, undefined)
    }
    if (this.head > 1024 && this.head * 2 > this.pending.length) {
      this.pending = this.pending.slice(this.head)
      this.head = 0
    }
    return fault
  }
}
