import type { ConnectionHost } from './host'

/**
 * Lookups in the log a connection resumed without its publish memory makes (one per channel and
 * event-loop turn: on Redis, a scan of the channel's stream); past them, publishes are not looked up.
 */
const MAX_LOOKUPS = 100
/** Messages one lookup asks for at most (a resend of a full publish fits): more start another lookup. */
const MAX_LOOKUP_MESSAGES = 1000

/** Resends of one channel looked up together, and their answers in the same order. */
interface Lookup {
  resends: Array<{ msgSerial: number; count: number }>
  messages: number
  answers: Promise<Array<string[] | undefined>>
}

/**
 * The resends of a connection that resumed here without what its earlier node knew of its
 * publishes (that node died), looked up in the channels' logs: the client resends what it held
 * unanswered first thing, so the resends of one channel that arrive in one turn are looked up together.
 */
export class ResendLookup {
  private lookupsLeft = MAX_LOOKUPS
  /** The lookup of each channel gathering the resends of this turn. */
  private lookups?: Map<string, Lookup>

  constructor(private readonly host: ConnectionHost) {}

  /** The serials a protocol message has in the channel's log when all its `count` messages are there (a resend), else undefined. */
  inLog(channel: string, msgSerial: number, count: number): Promise<string[] | undefined> {
    let lookup = this.lookups?.get(channel)
    if (!lookup || lookup.messages + count > MAX_LOOKUP_MESSAGES) {
      if (this.lookupsLeft <= 0) return Promise.resolve(undefined)
      this.lookupsLeft--
      const resends: Lookup['resends'] = []
      const made: Lookup = {
        resends,
        messages: 0,
        // made once this turn's frames are in: the resends the client sent together go together
        answers: new Promise<void>((next) => this.host.core.timers.soon(next)).then(() => {
          if (this.lookups!.get(channel) === made) this.lookups!.delete(channel)
          return this.host.core.channels.publishedBefore(this.host.principalOf, channel, this.host.id, resends)
        }),
      }
      ;(this.lookups ??= new Map()).set(channel, (lookup = made))
    }
    lookup.messages += count
    const i = lookup.resends.push({ msgSerial, count }) - 1
    return lookup.answers.then(
      (a) => a[i],
      () => undefined,
    )
  }
}
