import type { Hub, Subscriber } from '../fanout/hub'
import type { Occupancy } from '../fanout/occupancy'
import { IdGenerator } from '../model/ids'
import type { Clock, Timers } from '../ports'
import type { Message } from '../types'
import type { PresenceService } from './presence-service'

/** The `metrics` of an occupancy event (`[meta]occupancy`), as the hosted service names them. */
export interface OccupancyMetrics {
  connections: number
  publishers: number
  subscribers: number
  presenceConnections: number
  presenceMembers: number
  presenceSubscribers: number
  objectPublishers: number
  objectSubscribers: number
}

export interface OccupancyEvent {
  id: string
  timestamp: number
  metrics: OccupancyMetrics
  /** `{metrics}` as JSON text: the event's data, made once for every watcher. */
  data: string
}

/** An attachment that asked for occupancy events (`occupancy=metrics`). */
export interface OccupancyWatcher {
  occupancy(event: OccupancyEvent): void
}

/**
 * How often a watched channel's counts are read again even without a local cause: a change made
 * on another node (an attach there) reaches this node's watchers within this time. Changes made
 * on this node, and presence changes on any node (they travel through the channel), are read
 * within MIN_GAP_MS.
 */
export const OCCUPANCY_POLL_MS = 1_000
/** A watched channel's counts are read at most this often. */
const MIN_GAP_MS = 50
/**
 * Counts that changed without any of them moving between zero and non-zero (a mode change, sent
 * at once) are sent at most this often per channel, as the hosted service debounces them (it
 * allows up to 15 s): a busy room's churn costs each watcher at most one event a second.
 */
export const OCCUPANCY_DEBOUNCE_MS = 1_000

interface Watched {
  appId: string
  channel: string
  /** Each watcher and the metrics (as JSON) it was last sent. */
  watchers: Map<OccupancyWatcher, string | undefined>
  /** Cancels the read planned. */
  timer?: () => void
  /** Cancels the read that sends counts held back by the debounce. */
  held?: () => void
  reading: boolean
  again: boolean
  lastRead: number
  /** The counts last sent to the channel's watchers, and when. */
  lastSent?: OccupancyMetrics
  lastSentAt: number
  sub: Subscriber
}

/** Whether some count moved between zero and non-zero. */
const modeChange = (a: OccupancyMetrics, b: OccupancyMetrics) =>
  (Object.keys(a) as Array<keyof OccupancyMetrics>).some((k) => (a[k] === 0) !== (b[k] === 0))

/**
 * Occupancy events: a node reads the counts of each channel that has a local watcher (attachments
 * on every node from the occupancy store, presence members from the presence store, so every node
 * computes the same numbers) when they may have changed, and sends each watcher the counts when
 * they differ from what it was last sent (a new watcher gets them at once; a change that moves
 * no count between zero and non-zero is debounced, OCCUPANCY_DEBOUNCE_MS). Events are not
 * channel entries: they have no serial, are never stored, replayed or counted as messages.
 */
export class OccupancyEvents {
  private readonly channels = new Map<string, Watched>()
  private readonly ids = new IdGenerator()
  /** Stops the poll of every watched channel. */
  private poll?: () => void

  constructor(
    private readonly occupancy: Occupancy,
    private readonly presence: PresenceService,
    private readonly hub: Hub,
    private readonly clock: Clock,
    private readonly timers: Timers,
  ) {
    occupancy.listen((appId, channel) => this.changed(appId, channel))
  }

  /** Sends `w` the channel's occupancy now and whenever it changes, until the returned function is called. */
  watch(appId: string, channel: string, w: OccupancyWatcher): () => void {
    const k = appId + '\u0000' + channel
    let c = this.channels.get(k)
    if (!c) {
      const entry: Watched = {
        appId,
        channel,
        watchers: new Map(),
        reading: false,
        again: false,
        lastRead: 0,
        lastSentAt: 0,
        // presence events travel through the channel: one seen here (from any node) moves presenceMembers
        sub: {
          connectionId: '',
          deliver: (_ch: string, batch: Message[]) => {
            if (batch.some((m) => m.kind === 'presence')) this.schedule(entry)
          },
        },
      }
      c = entry
      this.channels.set(k, c)
      this.hub.add(appId, channel, c.sub)
      this.poll ??= this.timers.every(OCCUPANCY_POLL_MS, () => {
        for (const w of this.channels.values()) this.schedule(w)
      })
    }
    c.watchers.set(w, undefined)
    this.schedule(c)
    const watched = c
    return () => {
      if (!watched.watchers.delete(w) || watched.watchers.size) return
      this.channels.delete(k)
      this.hub.remove(appId, channel, watched.sub)
      watched.timer?.()
      watched.held?.()
      if (!this.channels.size && this.poll) {
        this.poll()
        this.poll = undefined
      }
    }
  }

  /** The counts of a channel may have changed on this node. */
  changed(appId: string, channel: string): void {
    const c = this.channels.get(appId + '\u0000' + channel)
    if (c) this.schedule(c)
  }

  private schedule(c: Watched) {
    if (c.reading) {
      c.again = true
      return
    }
    if (c.timer) return
    const wait = Math.max(0, c.lastRead + MIN_GAP_MS - this.clock.now())
    c.timer = this.timers.after(wait, () => {
      c.timer = undefined
      void this.read(c)
    })
  }

  private async read(c: Watched) {
    if (this.channels.get(c.appId + '\u0000' + c.channel) !== c) return
    c.reading = true
    c.again = false
    c.lastRead = this.clock.now()
    try {
      const [o, p] = await Promise.all([
        this.occupancy.cluster(c.appId, c.channel),
        this.presence.occupancy(c.appId, c.channel),
      ])
      const metrics: OccupancyMetrics = {
        connections: o.connections,
        publishers: o.publishers,
        subscribers: o.subscribers,
        presenceConnections: p.presenceConnections,
        presenceMembers: p.presenceMembers,
        presenceSubscribers: o.presenceSubscribers,
        objectPublishers: o.objectPublishers,
        objectSubscribers: o.objectSubscribers,
      }
      const key = JSON.stringify(metrics)
      const now = this.clock.now()
      // a watcher that has had nothing yet gets the counts at once; the others at once on a mode
      // change, else once the debounce since the last event has passed (read again then)
      const due = !c.lastSent || modeChange(c.lastSent, metrics) || now - c.lastSentAt >= OCCUPANCY_DEBOUNCE_MS
      let event: OccupancyEvent | undefined
      let held = false
      for (const [w, last] of c.watchers) {
        if (last === key) continue
        if (last !== undefined && !due) {
          held = true
          continue
        }
        event ??= { id: this.ids.next(), timestamp: now, metrics, data: JSON.stringify({ metrics }) }
        c.watchers.set(w, key)
        w.occupancy(event)
      }
      if (event && due) {
        c.lastSent = metrics
        c.lastSentAt = now
      }
      if (held && !c.held)
        c.held = this.timers.after(c.lastSentAt + OCCUPANCY_DEBOUNCE_MS - now, () => {
          c.held = undefined
          this.schedule(c)
        })
    } catch {
      // the store did not answer: the next poll reads again
    } finally {
      c.reading = false
      if (c.again) this.schedule(c)
    }
  }

  close(): void {
    this.poll?.()
    this.poll = undefined
    for (const c of this.channels.values()) {
      c.timer?.()
      c.held?.()
      this.hub.remove(c.appId, c.channel, c.sub)
    }
    this.channels.clear()
  }
}
