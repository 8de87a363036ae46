import type { BrokerListener } from '../../core/ports'
import type { Message } from '../../core/types'
import { Ring } from '../shared/ring'
import { ringCodec } from '../shared/ring-codec'
import type { RedisSubscriber } from './clients'
import { idFromSerial, parseNotification, serialFromId } from './codec'
import type { RedisKeys } from './keys'

/** What the subscriptions read of a channel's stream (the broker's reads). */
export interface StreamReads {
  /** Entries of `key` between `a` and `b` (XRANGE / XREVRANGE bounds), at most `count`. */
  range(cmd: 'XRANGE' | 'XREVRANGE', key: string, a: string, b: string, count: number): Promise<Message[]>
  /** A serial just below any id Redis would assign to `stream` from now on. */
  now(stream: string): Promise<string>
}

export interface Subscription {
  app: string
  channel: string
  listeners: Set<BrokerListener>
  /** Resolves once Redis has confirmed the SSUBSCRIBE. */
  subscribed: Promise<void>
  /** Serial of the last message handed to listeners (gap detection). */
  last?: string
  /** Serializes notification handling (a gap fill must finish before the next batch). */
  queue: Promise<void>
  onMessage: (buf: Buffer) => void
  /**
   * Cache of what this node delivered since it subscribed: every message after `ring.floor`, in
   * order. Resumes that start inside it are served from memory; the stream stays the truth.
   */
  ring?: Ring
  /** Callers of `delivered` waiting for an entry to be handed to the listeners, oldest first. */
  waiters?: Waiter[]
  /** Resolves the waiters past their time (set while there are waiters). */
  expiry?: ReturnType<typeof setTimeout>
}

interface Waiter {
  serial: string
  /** When it is resolved anyway (ms). */
  until: number
  resolve: () => void
}

/**
 * The node's subscriptions to channel notifications on Redis: one sharded pub/sub subscription
 * (SSUBSCRIBE) per channel with local listeners. Notifications of a channel are handled one after
 * the other; one whose previous id is not the last entry this node delivered is preceded by the
 * gap read from the stream (gap fill), and after a reconnect of the subscriber every channel
 * catches up from the stream (notifications may have been missed), so delivery is complete and
 * in order. What a channel delivered since its subscription is kept in a ring, so a resume that
 * starts inside it is served from memory (the stream stays the truth).
 */
export class ChannelSubscriptions {
  private subs = new Map<string, Subscription>()

  constructor(
    private readonly sub: RedisSubscriber,
    private readonly keys: RedisKeys,
    private readonly reads: StreamReads,
    private readonly s: { ringSize: number; ringMaxBytes: number; redisTimeoutMs: number },
    private readonly onError: (e: unknown) => void,
  ) {
    // after a reconnect, notifications may have been missed: catch up from the streams
    sub.onReady(() => {
      for (const s of this.subs.values()) this.enqueue(s, () => this.catchUp(s))
    })
  }

  /** The channel's subscription on this node, if it has one. */
  get(app: string, channel: string): Subscription | undefined {
    return this.subs.get(`${app}\u0000${channel}`)
  }

  subscribe(app: string, channel: string, listener: BrokerListener): () => void {
    const k = `${app}\u0000${channel}`
    let s = this.subs.get(k)
    if (!s) {
      const entry: Subscription = {
        app,
        channel,
        listeners: new Set(),
        subscribed: Promise.resolve(),
        queue: Promise.resolve(),
        onMessage: (buf: Buffer) => this.enqueue(entry, () => this.onNotification(entry, buf)),
      }
      entry.subscribed = this.sub
        .sSubscribe(this.keys.notify(app, channel), entry.onMessage, true)
        .then(async () => {
          // a base for gap detection and reconnect catch-up, even before the first notification
          const last = await this.reads.range('XREVRANGE', this.keys.stream(app, channel), '+', '-', 1)
          // an empty stream: the ring starts at Redis's "now" (anything before it is gone, or never was)
          const base = last.length ? last[0]!.serial : await this.reads.now(this.keys.stream(app, channel))
          if (entry.last === undefined && last.length) entry.last = base
          // what the stream held before is never handed out by this subscription
          if (entry.waiters) this.release(entry, entry.last ?? base)
          // the ring is complete from here on; anything delivered before is left to the stream
          entry.ring = new Ring(
            { minCount: this.s.ringSize, windowMs: 0, maxBytes: this.s.ringMaxBytes },
            entry.last !== undefined && entry.last > base ? entry.last : base,
            ringCodec,
          )
        })
        .catch((e) => this.onError(e))
      s = entry
      this.subs.set(k, s)
    }
    s.listeners.add(listener)
    const sub = s
    return () => {
      sub.listeners.delete(listener)
      if (sub.listeners.size === 0 && this.subs.get(k) === sub) {
        this.subs.delete(k)
        if (sub.waiters) this.release(sub)
        // only this subscription's listener: a newer subscription to the same channel keeps its own
        this.sub.sUnsubscribe(this.keys.notify(app, channel), sub.onMessage, true).catch((e) => this.onError(e))
      }
    }
  }

  private enqueue(s: Subscription, work: () => Promise<void>) {
    s.queue = s.queue.then(work).catch((e) => this.onError(e))
  }

  private async onNotification(s: Subscription, buf: Buffer) {
    const { prev, messages } = parseNotification(buf)
    if (s.last !== undefined && serialFromId(prev) > s.last && messages.length) {
      const first = idFromSerial(messages[0]!.serial)
      this.emit(
        s,
        await this.reads.range(
          'XRANGE',
          this.keys.stream(s.app, s.channel),
          `(${idFromSerial(s.last)}`,
          `(${first}`,
          100_000,
        ),
      )
    }
    this.emit(s, messages)
  }

  private async catchUp(s: Subscription) {
    if (s.last === undefined) return
    this.emit(
      s,
      await this.reads.range('XRANGE', this.keys.stream(s.app, s.channel), `(${idFromSerial(s.last)}`, '+', 100_000),
    )
  }

  private emit(s: Subscription, messages: Message[]) {
    const last = s.last
    const fresh = last === undefined ? messages : messages.filter((m) => m.serial > last)
    if (!fresh.length) return
    s.last = fresh[fresh.length - 1]!.serial
    // an ephemeral message is delivered, never kept: no resume from memory replays it
    if (s.ring) for (const m of fresh) if (!isEphemeral(m)) s.ring.push(m)
    for (const l of s.listeners) l(s.app, s.channel, fresh)
    if (s.waiters) this.release(s, s.last)
  }

  /**
   * The notification of an append reaches this node apart from the script's reply (on the
   * subscriber's connection): a caller that must not answer before the append was handed to the
   * channel's listener here (a realtime publish's ACK after its echo) waits for it, about
   * REDIS_TIMEOUT_MS at most (a notification lost with the subscriber's connection is caught up
   * after its reconnect). Only its callers pay for it: a publish does not.
   */
  delivered(app: string, channel: string, serial: string): Promise<void> | undefined {
    const s = this.subs.get(`${app}\u0000${channel}`)
    if (!s || (s.last !== undefined && s.last >= serial)) return undefined
    const timeout = this.s.redisTimeoutMs
    return new Promise<void>((resolve) => {
      ;(s.waiters ??= []).push({ serial, until: Date.now() + timeout, resolve })
      // one timer per subscription at a time, not one per waiter
      s.expiry ??= setTimeout(() => this.expire(s), timeout)
    })
  }

  /** Resolves the waiters of entries up to `upTo` (every waiter without it). */
  private release(s: Subscription, upTo?: string) {
    const waiters = s.waiters!
    let left: Waiter[] | undefined
    for (const w of waiters) if (upTo !== undefined && w.serial > upTo) (left ??= []).push(w)
    if (left?.length === waiters.length) return
    s.waiters = left
    // left running otherwise: it finds nothing, once (no timer set and cleared per publish)
    if (upTo === undefined && s.expiry) {
      clearTimeout(s.expiry)
      s.expiry = undefined
    }
    for (const w of waiters) if (upTo === undefined || w.serial <= upTo) w.resolve()
  }

  /** Resolves the waiters past their time; the timer again for the oldest of the others. */
  private expire(s: Subscription) {
    s.expiry = undefined
    const waiters = s.waiters
    if (!waiters) return
    const now = Date.now()
    const left = waiters.filter((w) => w.until > now)
    s.waiters = left.length ? left : undefined
    for (const w of waiters) if (w.until <= now) w.resolve()
    if (left.length) s.expiry = setTimeout(() => this.expire(s), Math.max(1, left[0]!.until - now))
  }

  close() {
    for (const s of this.subs.values()) {
      s.listeners.clear()
      if (s.waiters) this.release(s)
    }
    this.subs.clear()
  }
}

const isEphemeral = (m: Message): boolean => (m.extras as { ephemeral?: unknown } | undefined)?.ephemeral === true
