import type { GatewayError } from '../../errors'
import type { Message } from '../types'
import type { SessionSink } from './session'

/** Where a stage hands on a batch: the next stage, or the transport. False: the transport is over its byte budget. */
export type Next = (batch: Message[]) => boolean

/**
 * One delivery stage of one channel of a subscription, between the session (which has put the
 * channel's entries in order, each once) and the transport: it may hold entries, join them or
 * put others in their place, and hands them on in channel order. Batches are shared: a stage
 * never changes one, and hands on the very array it got when it changes nothing (the transports
 * encode a batch once for all its subscribers).
 */
export interface Stage {
  /** A batch of the channel; returns what the transport answered, or true while the stage holds it. */
  push(batch: Message[]): boolean
  /** Where delivery starts (the session's position before its first entry), and whether it resumes. */
  begin?(position: string, resumed: boolean): void
  /** The subscription ends: timers cancelled, what is held dropped (the log keeps it). */
  dispose(): void
}

/** Makes a stage that hands on to `next`. */
export type StageMaker = (next: Next) => Stage

/**
 * A session's sink with stages in front of the transport's, per channel (none: the transport's
 * own deliver, untouched). Makers are listed first to last: the first gets the session's batches.
 */
export class StagedSink implements SessionSink {
  private readonly stages: Array<Stage[] | undefined>
  private readonly heads: Array<Stage | undefined>

  constructor(
    private readonly sink: SessionSink,
    makers: Array<StageMaker[] | undefined>,
    /** Per channel: the session resumes it (a resume token or channelSerial), rather than starting fresh. */
    private readonly resumed: boolean[],
  ) {
    this.stages = makers.map((list, i) => {
      if (!list?.length) return undefined
      const made: Stage[] = []
      let next: Next = (batch) => sink.deliver(i, batch)
      for (let k = list.length - 1; k >= 0; k--) {
        const stage = list[k]!(next)
        made.unshift(stage)
        next = (batch) => stage.push(batch)
      }
      return made
    })
    this.heads = this.stages.map((s) => s?.[0])
  }

  deliver(index: number, batch: Message[]): boolean {
    const head = this.heads[index]
    return head ? head.push(batch) : this.sink.deliver(index, batch)
  }

  begin(positions: string[], heads: string[]): void {
    this.stages.forEach((list, i) => list?.forEach((s) => s.begin?.(positions[i]!, this.resumed[i] === true)))
    this.sink.begin(positions, heads)
  }

  notice(err: GatewayError): void {
    this.sink.notice(err)
  }

  end(err: GatewayError): void {
    this.dispose()
    this.sink.end(err)
  }

  close(): void {
    this.dispose()
    this.sink.close()
  }

  dispose(): void {
    for (const list of this.stages) list?.forEach((s) => s.dispose())
  }
}
