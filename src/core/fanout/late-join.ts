import type { Message } from '../types'
import { isWhole } from '../model/appends'
import type { Next, Stage } from './stages'

/**
 * A late joiner's first delivery of a message (channels/mutable-messages.ts `joinedAt`): an update
 * of its whole data in the place of `append`, and the version serial that data covers.
 */
export type JoinedState = (append: Message) => Promise<{ entry: Message; through: string } | undefined>

/** Messages published before the start whose content a subscriber is known to hold (beyond: one lookup more). */
const MAX_KNOWN = 1000
/** Entries kept behind a lookup before the session is told the subscriber is full (it then reads on from the log). */
const MAX_QUEUED = 1000

/**
 * The first delivery of a message a subscriber joined mid-stream (AI Transport): a subscription
 * that starts fresh (no resume) after a message was published and then receives an append to it
 * gets, in the append's place, a `message.update` with the whole data so far, then the appends
 * that follow as usual; appends that data already holds are not sent. A whole change (update,
 * delete) of such a message is its first delivery as it is. Subscriptions that resume, and
 * messages published after the start (the subscriber had their creation), are left alone; a
 * rewind replays such messages whole already (channels/rewind-state.ts).
 *
 * The whole data is read from the version store, so entries behind a first contact wait for it,
 * in order; past MAX_QUEUED the session pauses (the log keeps the rest) and resumes when the
 * queue has gone.
 */
export class LateJoin implements Stage {
  /** Entries of messages at or below it were published before the start; undefined: resumed (nothing to do). */
  private position?: string
  /** Message serial -> the version serial the subscriber's copy covers (appends at or below it are not sent). */
  private readonly known = new Map<string, string>()
  private queue?: Message[][]
  private queued = 0
  private paused = false
  private disposed = false

  constructor(
    private readonly next: Next,
    private readonly lookup: JoinedState,
    /** The session reads on (it was told the subscriber is full while entries waited here). */
    private readonly resume: () => void,
  ) {}

  begin(position: string, resumed: boolean): void {
    this.position = resumed ? undefined : position
  }

  push(batch: Message[]): boolean {
    if (this.queue) {
      this.queue.push(batch)
      this.queued += batch.length
      if (this.queued <= MAX_QUEUED) return true
      this.paused = true
      return false
    }
    return this.run(batch)
  }

  dispose(): void {
    this.disposed = true
    this.queue = undefined
  }

  /** Hands on `batch` up to its first first contact, and starts the lookup that the rest waits for. */
  private run(batch: Message[]): boolean {
    const pos = this.position
    if (pos === undefined) return this.next(batch)
    let out: Message[] | undefined // made only once the output differs from `batch`
    for (let i = 0; i < batch.length; i++) {
      const m = batch[i]!
      const ref = m.kind === 'mutation' ? m.mutation!.serial : undefined
      if (ref === undefined || ref > pos) {
        out?.push(m)
        continue
      }
      if (isWhole(m)) {
        this.learn(ref, m.serial)
        out?.push(m)
        continue
      }
      const through = this.known.get(ref)
      if (through === undefined) {
        const room = out ? (out.length ? this.next(out) : true) : i > 0 ? this.next(batch.slice(0, i)) : true
        this.wait(m, batch.slice(i))
        return room
      }
      if (m.serial <= through) out ??= batch.slice(0, i)
      else out?.push(m)
    }
    if (!out) return this.next(batch)
    return out.length ? this.next(out) : true
  }

  /** Looks up the whole data of `append`'s message; `rest` (from `append` on) and later batches wait for it. */
  private wait(append: Message, rest: Message[]) {
    this.queue = [rest]
    this.queued = rest.length
    const ref = append.mutation!.serial
    this.lookup(append)
      .catch(() => undefined)
      .then((found) => {
        if (this.disposed) return
        // not found (forgotten): the append goes as it is
        this.learn(ref, found?.through ?? '')
        if (found) this.next([found.entry])
        this.drain()
      })
  }

  /** Runs what waited, in order, until it is all handed on or waits for another lookup. */
  private drain() {
    while (this.queue) {
      const batches = this.queue
      this.queue = undefined
      this.queued = 0
      let k = 0
      for (; k < batches.length && !this.queue; k++) this.run(batches[k]!)
      if (this.queue) {
        // another first contact: what followed it waits behind it
        const rest = batches.slice(k)
        for (const b of rest) (this.queue as Message[][]).push(b)
        this.queued += rest.reduce((n, b) => n + b.length, 0)
        return
      }
    }
    if (this.paused) {
      this.paused = false
      this.resume()
    }
  }

  private learn(ref: string, through: string) {
    this.known.delete(ref)
    this.known.set(ref, through)
    if (this.known.size > MAX_KNOWN) this.known.delete(this.known.keys().next().value!)
  }
}
