import type { Message } from '../types'

/** Which entries the log does not keep that a transport delivers (a realtime attachment's modes). */
export interface HeldKinds {
  /** Summaries of annotated messages (the SUBSCRIBE mode). */
  summaries: boolean
  /** Annotations (the ANNOTATION_SUBSCRIBE mode). */
  annotations: boolean
  /** Annotations of this connection are not delivered to it (`echo=false`): not missed either. */
  exceptConnection?: string
}

/** Messages whose latest summary a session not live keeps, per channel; beyond, the oldest is dropped and counted missed. */
export const MAX_HELD_SUMMARIES = 1000

/**
 * What a session keeps of the entries that go only live (annotations and summaries, never in the
 * log) while it is not live (paused because its transport is full, or reading the log): the log
 * gives back what the session skipped of everything else, not these. A summary is a message's
 * whole state, so the latest of each message is kept (in the order the messages were first
 * summarised) and handed on when the session goes live: the subscriber ends on every message's
 * current summary. Annotations are events: they are counted, and the sink is told how many it
 * missed (it reads them with the annotations of their message).
 */
export class EphemeralHold {
  private readonly summaries: Array<Map<string, Message> | undefined> = []
  private readonly missed: number[] = []

  constructor(private readonly kinds: HeldKinds) {}

  /** The entries of `batch` the log keeps; keeps the summaries, counts the annotations. */
  take(i: number, batch: Message[]): Message[] {
    let rest: Message[] | undefined
    for (let j = 0; j < batch.length; j++) {
      const m = batch[j]!
      if (m.kind !== 'summary' && m.kind !== 'annotation') {
        rest?.push(m)
        continue
      }
      rest ??= batch.slice(0, j)
      if (m.kind === 'summary') {
        if (this.kinds.summaries) this.keep(i, m)
      } else if (this.kinds.annotations && (!m.connectionId || m.connectionId !== this.kinds.exceptConnection))
        this.missed[i] = (this.missed[i] ?? 0) + 1
    }
    return rest ?? batch
  }

  private keep(i: number, m: Message) {
    const kept = (this.summaries[i] ??= new Map())
    const key = m.name ?? m.id
    kept.delete(key)
    kept.set(key, m)
    if (kept.size > MAX_HELD_SUMMARIES) {
      kept.delete(kept.keys().next().value!)
      this.missed[i] = (this.missed[i] ?? 0) + 1
    }
  }

  /** Channel #i's kept summaries and how many entries it missed; both forgotten. */
  release(i: number): { summaries: Message[]; missed: number } {
    const summaries = [...(this.summaries[i]?.values() ?? [])]
    const missed = this.missed[i] ?? 0
    this.summaries[i] = undefined
    this.missed[i] = 0
    return { summaries, missed }
  }
}
