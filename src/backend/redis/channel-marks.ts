/**
 * A channel's entry in its app's channel index, and its stream's expiry, are refreshed at most
 * this often per node (ms); the expiry is set this much past the retention, so a stream never
 * expires before its last message's retention ends.
 */
export const INDEX_REFRESH_MS = 1000

/** When this node last wrote a channel's index entry and set its stream's expiry (ms; 0: not yet, or it failed). */
export interface Marks {
  indexed: number
  expired: number
  /** The channel's keys of the publish step, made at its first publish (not four strings per publish). */
  keys: PublishKeys | undefined
}

/** A channel's keys that every publish to it names. */
export interface PublishKeys {
  stream: string
  /** The stream's cluster slot (cluster.ts `keySlot`: every key of the channel has it). */
  slot: number
  lastId: string
  notify: string
  idemPrefix: string
}

/** `now` (ms), marked as `m[what]`, unless it was marked within INDEX_REFRESH_MS. */
export function markDue(m: Marks, what: 'indexed' | 'expired', now: number): number | undefined {
  if (now - m[what] < INDEX_REFRESH_MS) return undefined
  m[what] = now
  return now
}

/** At most this many channels' marks are remembered, then forgotten at once (a refresh more, no harm). */
const MAX_MARKED = 100_000

/** The marks of the channels this node published to: a lookup by app, then by channel (no key built per publish). */
export class ChannelMarks {
  private marks = new Map<string, Map<string, Marks>>()
  /** Channels in `marks`, over every app. */
  private marked = 0

  of(app: string, channel: string): Marks {
    let byChannel = this.marks.get(app)
    let m = byChannel?.get(channel)
    if (m) return m
    if (this.marked >= MAX_MARKED) {
      this.marks.clear()
      this.marked = 0
      byChannel = undefined
    }
    if (!byChannel) this.marks.set(app, (byChannel = new Map()))
    byChannel.set(channel, (m = { indexed: 0, expired: 0, keys: undefined }))
    this.marked++
    return m
  }
}
