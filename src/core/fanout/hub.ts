import { metrics, NO_LABELS } from '../../lib/metrics'
import type { Broker, Clock, Timers } from '../ports'
import type { Message } from '../types'
import type { ChannelHold } from './channel-hold'

const deliveryLatency = metrics.histogram(
  'gateway_delivery_latency_seconds',
  "Age of a channel batch's oldest message (from its publish timestamp) once every local subscriber " +
    'had the batch written: one observation per channel and event-loop turn.',
  [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
)
const latencySeries = deliveryLatency.series(NO_LABELS)

/** A local consumer of channel messages (one channel of an event-stream connection). */
export interface Subscriber {
  connectionId: string
  clientId?: string
  /**
   * Messages of `channel` in order, once per event-loop turn. `batch` is shared by every
   * subscriber of the channel: read it, never change it.
   */
  deliver(channel: string, batch: Message[]): void
}

interface ChannelSubs {
  name: string
  subs: Set<Subscriber>
  unsubscribe: () => void
  /** Messages received from the broker during the current turn, not yet handed out. */
  pending: Message[] | undefined
  /** `pending` is the broker's own array (not yet copied). */
  borrowed: boolean
  /** The channel's rule holds its deliveries (batching, conflation): what the broker gives goes there first. */
  hold?: ChannelHold
  /** Batches the hold let go, each delivered as it is, before `pending`. */
  ready?: Message[][]
  /** In `dirty`: delivered at the end of the turn. */
  queued: boolean
}

/** Makes the hold of a channel whose rule asks for one (channel-hold.ts); undefined: deliveries go as they come. */
export type HoldFor = (appId: string, channel: string, emit: (batch: Message[]) => void) => ChannelHold | undefined

/**
 * Local subscriptions of this node. The hub subscribes to the broker for a channel while it has
 * a local subscriber, and hands what the broker delivers to each of them; it never receives
 * publishes directly. Deliveries of one event-loop turn are coalesced per channel, so each
 * subscriber gets one batch per channel per turn and serialization can be shared.
 */
export class Hub {
  private channels = new Map<string, ChannelSubs>()
  private dirty: ChannelSubs[] = []
  private scheduled = false

  constructor(
    private readonly broker: Broker,
    /** The broker's clock: message timestamps are its (delivery latency). */
    private readonly clock: Clock,
    /** Batches are handed out once per event-loop turn (`soon`). */
    private readonly timers: Timers,
    private readonly holdFor?: HoldFor,
  ) {}

  private readonly flushSoon = () => this.flush()

  private static key(appId: string, channel: string) {
    return appId + '\u0000' + channel
  }

  add(appId: string, channel: string, sub: Subscriber): void {
    const k = Hub.key(appId, channel)
    let c = this.channels.get(k)
    if (!c) {
      const entry: ChannelSubs = {
        name: channel,
        subs: new Set(),
        unsubscribe: () => {},
        pending: undefined,
        borrowed: false,
        queued: false,
      }
      entry.hold = this.holdFor?.(appId, channel, (batch) => this.release(entry, batch))
      entry.unsubscribe = this.broker.subscribe(appId, channel, (_a, _ch, msgs) =>
        entry.hold ? entry.hold.push(msgs) : this.receive(entry, msgs),
      )
      c = entry
      this.channels.set(k, c)
    }
    c.subs.add(sub)
  }

  remove(appId: string, channel: string, sub: Subscriber): void {
    const k = Hub.key(appId, channel)
    const c = this.channels.get(k)
    if (!c) return
    if (!c.subs.delete(sub)) return
    if (c.subs.size === 0) {
      c.unsubscribe()
      c.hold?.dispose()
      this.channels.delete(k)
    }
  }

  private receive(c: ChannelSubs, msgs: Message[]) {
    if (c.pending === undefined) {
      c.pending = msgs
      c.borrowed = true
      this.enqueue(c)
    } else {
      if (c.borrowed) {
        c.pending = c.pending.slice()
        c.borrowed = false
      }
      for (const m of msgs) c.pending.push(m)
    }
  }

  /** A batch the channel's hold let go: delivered as it is at the end of the turn. */
  private release(c: ChannelSubs, batch: Message[]) {
    ;(c.ready ??= []).push(batch)
    this.enqueue(c)
  }

  private enqueue(c: ChannelSubs) {
    if (c.queued) return
    c.queued = true
    this.dirty.push(c)
    if (!this.scheduled) {
      this.scheduled = true
      this.timers.soon(this.flushSoon)
    }
  }

  private flush() {
    this.scheduled = false
    const dirty = this.dirty
    this.dirty = []
    for (const c of dirty) {
      c.queued = false
      if (c.ready) {
        const ready = c.ready
        c.ready = undefined
        for (const batch of ready) this.deliverAll(c, batch)
      }
      const batch = c.pending
      if (batch === undefined) continue
      c.pending = undefined
      this.deliverAll(c, batch)
    }
  }

  private deliverAll(c: ChannelSubs, batch: Message[]) {
    for (const s of c.subs) s.deliver(c.name, batch)
    if (c.subs.size) this.observe(batch[0]!.timestamp)
  }

  /** The delivery latency of a batch whose oldest message has this timestamp (ms); none without one. */
  private observe(timestamp: number) {
    const age = this.clock.now() - timestamp
    if (age >= 0) deliveryLatency.observeIn(latencySeries, age / 1000)
    else if (age < 0) deliveryLatency.observeIn(latencySeries, 0) // clocks of two nodes apart
  }

  /** Live subscriptions of a channel on this node (each is one connection). */
  subscribers(appId: string, channel: string): Array<{ connectionId: string; clientId?: string }> {
    return [...(this.channels.get(Hub.key(appId, channel))?.subs ?? [])].map((s) => ({
      connectionId: s.connectionId,
      clientId: s.clientId,
    }))
  }

  /** Subscribers of the channel on this node. */
  count(appId: string, channel: string): number {
    return this.channels.get(Hub.key(appId, channel))?.subs.size ?? 0
  }

  /** Channels with local subscribers and their total subscriptions (metrics). */
  size(): { channels: number; subscriptions: number } {
    let subscriptions = 0
    for (const c of this.channels.values()) subscriptions += c.subs.size
    return { channels: this.channels.size, subscriptions }
  }
}
