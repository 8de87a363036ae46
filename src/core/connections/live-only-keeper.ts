import type { Hub, Subscriber } from '../fanout/hub'
import type { Message } from '../types'

/** Annotations a keeper holds at most; past them it only counts (the client is told of the loss). */
export const KEPT_ANNOTATIONS = 1000
/** Messages whose latest summary a keeper holds at most; past them it only counts. */
export const KEPT_SUMMARIES = 100
/** Entries all the keepers of one dropped connection hold together at most (its channels share it). */
export const KEPT_PER_CONNECTION = 5000

/** What the keepers of one connection may still hold (one object shared by them). */
export interface KeptBudget {
  left: number
}

/**
 * What a dropped connection's attachment would have been sent of the channel's live-only entries
 * (annotations, summaries: the log keeps neither, so a resume's replay cannot give them back),
 * from the drop until the resumed connection attaches the channel again on this node: a
 * subscriber of the channel in the hub, kept with what the connection left for its resume
 * (registry.ts). Annotations are kept in order, summaries the latest of each message; bounded per
 * channel and, with the connection's other keepers, per connection (KEPT_PER_CONNECTION): past the
 * bounds it counts what it let go. Entries that reached the old socket before the drop
 * are not here, so handing these on duplicates nothing.
 */
export class LiveOnlyKeeper implements Subscriber {
  private readonly annotations: Message[] = []
  private readonly summaries = new Map<string, Message>()
  /** Entries let go past the bounds. */
  missed = 0
  private released = false

  constructor(
    private readonly hub: Hub,
    readonly appId: string,
    readonly channel: string,
    readonly connectionId: string,
    private readonly kinds: { annotations: boolean; summaries: boolean; exceptConnection?: string },
    /** Shared with the connection's other keepers, those of its earlier drops too (channel-ops.ts keepers). */
    readonly budget: KeptBudget = { left: KEPT_PER_CONNECTION },
    /**
     * The newest annotation or summary the attachment handed its transport before the drop ('' none):
     * a resume from a position before it did not receive it, and nothing here holds it.
     */
    readonly sent = '',
  ) {
    hub.add(appId, channel, this)
  }

  deliver(_channel: string, batch: Message[]): void {
    for (const m of batch) {
      if (m.kind === 'summary' && this.kinds.summaries) {
        const key = m.name ?? m.id
        // a newer summary of a message kept takes its place
        if (this.summaries.delete(key)) this.budget.left++
        if (this.summaries.size < KEPT_SUMMARIES && this.take()) this.summaries.set(key, m)
        else this.missed++
      } else if (
        m.kind === 'annotation' &&
        this.kinds.annotations &&
        (!m.connectionId || m.connectionId !== this.kinds.exceptConnection)
      ) {
        if (this.annotations.length < KEPT_ANNOTATIONS && this.take()) this.annotations.push(m)
        else this.missed++
      }
    }
  }

  /** Takes one entry of the connection's budget, if any is left. */
  private take(): boolean {
    if (this.budget.left <= 0) return false
    this.budget.left--
    return true
  }

  /**
   * Leaves the hub and gives its entries back to the budget (idempotent); what it kept stays
   * readable (for the hand-on that follows, after which nothing holds them).
   */
  release(): void {
    if (this.released) return
    this.released = true
    this.hub.remove(this.appId, this.channel, this)
    this.budget.left += this.annotations.length + this.summaries.size
  }

  /** What it kept with a serial below `before` (when given: what the new session did not see itself), in channel order. */
  kept(before?: string): Message[] {
    const all = [...this.annotations, ...this.summaries.values()]
    all.sort((a, b) => (a.serial < b.serial ? -1 : a.serial > b.serial ? 1 : 0))
    return before === undefined ? all : all.filter((m) => m.serial < before)
  }
}
