import { GatewayError } from '../../errors'
import type { Message } from '../types'

/**
 * What one filter evaluation may still spend, in steps: a node visited, a path segment read, a key or
 * element compared, 64 characters of two equal-length strings compared, a key of an object listed
 * (once per object: its key list is remembered). Every step is a bounded amount of work, so a
 * meter bounds the time an evaluation takes whatever the message: the message's size and the
 * filter's size only decide how soon it runs out.
 */
export interface Meter {
  left: number
}

/** A parsed filter expression, evaluated under a meter (channels/filter-expression.ts makes them). */
export interface CompiledFilter {
  /** The expression as given (filters with the same text are the same filter). */
  readonly expression: string
  /** Whether `m` passes; undefined when `meter` ran out first. */
  matches(m: Message, meter: Meter): boolean | undefined
}

export interface FilterSettings {
  /** Steps (filter-expression.ts `Meter`) the filters of one channel may spend on one delivered batch, on one node. */
  filterBudgetSteps: number
}

/**
 * The filters of filtered-channel subscribers on this node, shared per channel and expression:
 * a distinct filter of a channel runs once per delivered batch, whatever the number of
 * subscribers using it, and all of them get the same filtered batch (which the transports then
 * encode once). Subscribers without a filter never come here.
 *
 * Bounded in work: the filters of one channel may spend `filterBudgetSteps` on one delivered
 * batch (a batch holds one publish or more), split evenly among the channel's distinct filters,
 * so what one filter may spend depends on how many there are, not on the order they run in. A
 * filter that needs more than its share on a batch is refused: its subscribers end with 90000
 * (a realtime attachment gets a channel ERROR) and what it was working on is not delivered to
 * them. Cheap filters keep working while a costly one is refused beside them.
 */
export class ChannelFilters {
  private readonly channels = new Map<string, FilterGroup>()

  constructor(private readonly s: FilterSettings) {}

  /** The shared filter of `channel` with this expression; `release` it when the subscriber goes. */
  acquire(appId: string, channel: string, filter: CompiledFilter): SharedFilter {
    const key = appId + '\u0000' + channel
    let group = this.channels.get(key)
    if (!group) {
      group = new FilterGroup(this.s.filterBudgetSteps, () => this.channels.delete(key))
      this.channels.set(key, group)
    }
    return group.acquire(filter)
  }

  /** Distinct filters in use on this node (tests, diagnostics). */
  get size(): number {
    let n = 0
    for (const g of this.channels.values()) n += g.size
    return n
  }
}

/** The distinct filters of one channel and the budget they share. */
class FilterGroup {
  private readonly filters = new Map<string, SharedFilter>()

  constructor(
    readonly budget: number,
    private readonly empty: () => void,
  ) {}

  get size(): number {
    return this.filters.size
  }

  /** What one filter may spend on one batch. */
  share(): number {
    return Math.floor(this.budget / Math.max(1, this.filters.size))
  }

  acquire(compiled: CompiledFilter): SharedFilter {
    let f = this.filters.get(compiled.expression)
    if (!f) this.filters.set(compiled.expression, (f = new SharedFilter(this, compiled)))
    f.refs++
    return f
  }

  released(f: SharedFilter): void {
    if (this.filters.get(f.filter.expression) !== f) return
    this.filters.delete(f.filter.expression)
    if (this.filters.size === 0) this.empty()
  }
}

/** One distinct filter of a channel, used by `refs` subscribers. */
export class SharedFilter {
  refs = 0
  /** Each batch's answer (null: refused), kept while the batch lives: the next subscriber reuses it. */
  private readonly answers = new WeakMap<Message[], Message[] | null>()

  constructor(
    private readonly group: FilterGroup,
    readonly filter: CompiledFilter,
  ) {}

  /**
   * The entries of `batch` the filter lets through (presence always passes): `batch` itself when
   * all of them pass, else a new array, the same for every subscriber of this filter. Undefined
   * when the filter needs more than its share of the channel's budget on this batch.
   */
  apply(batch: Message[]): Message[] | undefined {
    let out = this.answers.get(batch)
    if (out === undefined) {
      out = select(batch, this.filter, { left: this.group.share() })
      this.answers.set(batch, out)
    }
    return out ?? undefined
  }

  /** The error a subscriber of a refused filter ends with. */
  refused(): GatewayError {
    return new GatewayError(
      90000,
      `Channel filter refused: it needs more work on a delivered batch than its share (${this.group.share()} steps ` +
        `of FILTER_BUDGET_STEPS ${this.group.budget}, shared by the channel's ${this.group.size} distinct filters on this node)`,
    )
  }

  /** One subscriber less; the last one removes the filter (and the channel's entry with its last filter). */
  release(): void {
    if (--this.refs === 0) this.group.released(this)
  }
}

/** What passes of `batch` (null: the meter ran out). */
function select(batch: Message[], filter: CompiledFilter, meter: Meter): Message[] | null {
  let out: Message[] | undefined
  for (let i = 0; i < batch.length; i++) {
    const m = batch[i]!
    const pass = m.kind === 'presence' || filter.matches(m, meter)
    if (pass === undefined) return null
    if (pass) out?.push(m)
    else out ??= batch.slice(0, i)
  }
  return out ?? batch
}
