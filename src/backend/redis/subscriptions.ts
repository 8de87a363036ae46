import type { BrokerListener } from '../../core/ports'
import type { Message, MessageDraft } from '../../core/types'
import { Ring } from '../shared/ring'
import { ringCodec } from '../shared/ring-codec'
import type { RedisSubscriber } from './clients'
import { endsWithId, idFromSerial, parseNotification } from './codec'
import type { RedisKeys } from './keys'
import { systemTimers } from '../../lib/clock'
import { sleep } from '../../lib/sleep'

/** What the subscriptions read of a channel's stream (the broker's reads). */
export interface StreamReads {
  /** Entries of `key` between `a` and `b` (XRANGE / XREVRANGE bounds), at most `count`. */
  range(cmd: 'XRANGE' | 'XREVRANGE', key: string, a: string, b: string, count: number): Promise<Message[]>
  /** A serial just below any id Redis would assign to `stream` from now on. */
  now(stream: string): Promise<string>
}

/**
 * This node in the set of nodes subscribed to a channel (keys.ts `nodes`), each with a time: a
 * node is in it only while its SSUBSCRIBE stands, added once Redis confirmed it (and after a
 * reconnect, and again every quarter of NODE_COUNTS_MS), removed before it unsubscribes; a join
 * drops the entries whose time ran out (a node that stopped without leaving). With the
 * channel's count of subscribers, the set being this node alone tells the publish script that
 * the one subscriber is the publishing node, which then delivers its publishes itself
 * (`published`, lua/log.ts): a node missing from the set, or one left in it, only costs
 * notifications; one in it whose subscription is gone (its connection lost, until it
 * reconnects; a removal that failed, until a join drops it) could make a notification skip a
 * subscriber that is not in the set, which only a second fault makes (its addition failed, or
 * a node of an earlier version).
 */
export interface Membership {
  join(app: string, channel: string): Promise<unknown>
  leave(app: string, channel: string): Promise<unknown>
}

/**
 * How long a node's entry in a channel's set stands after it last joined: a node that stopped
 * without leaving (a crash) costs notifications until a join after that drops it (live nodes
 * join four times as often: a few commands per subscribed channel), or the set, kept as long
 * after its last join, expires.
 */
export const NODE_COUNTS_MS = 30 * 60_000

export interface Subscription {
  app: string
  channel: string
  listeners: Set<BrokerListener>
  /** Resolves once Redis has confirmed the SSUBSCRIBE and what was appended before it stood was read. */
  subscribed: Promise<void>
  /** The serial it delivers after (the stream's last entry, or Redis's "now"), once subscribed. */
  start?: string
  /** A read of the stream after a publish of unknown outcome is queued (`unsure`). */
  unsure?: boolean
  /** Where the queued read of this node's own unnotified publishes ends (`published`). */
  readTo?: string
  /**
   * This node's unnotified publishes that do not follow what was delivered yet, oldest first:
   * each is delivered once the entry before it is (`published`).
   */
  held?: Held[]
  /** Reads the held publishes from the stream when the entries before them do not come in time. */
  heldTimer?: ReturnType<typeof setTimeout>
  /** Serial of the last message handed to listeners (gap detection). */
  last?: string
  /**
   * Its stream id as Redis wrote it, when this node delivered it from a publish's answer
   * (`published`); else undefined. A notification that ends with it holds nothing new.
   */
  lastId?: string
  /** Serializes the notifications handled by reads (a gap fill must finish before the next batch). */
  queue: Promise<void>
  /** Works in `queue` not finished: while any is, every notification waits its turn there. */
  busy: number
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

/** A publish of this node held until the entry before it is delivered (`published`'s arguments). */
interface Held {
  prev: string
  drafts: MessageDraft[]
  serials: string[]
  ids: ReadonlyArray<string | number>
}

/**
 * How long a held publish waits for the entry before it (another node's, whose notification is
 * on its way) before it is read from the stream: a notification lost with the subscriber's
 * connection is read again after its reconnect anyway, so this only bounds the wait.
 */
export const HOLD_MS = 100

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
 *
 * A notification that follows what was delivered (no gap, nothing queued) is handled at once,
 * with no promise; only its messages not delivered yet are decoded. A node that published
 * messages hands them here itself (`published`) when the script's answer says they follow
 * the last one delivered: they are delivered from what the node holds, and their notification,
 * when it comes, finds nothing new in it and decodes nothing. Order is the previous-id chain's
 * either way: messages are delivered only right after the entry before them.
 */
export class ChannelSubscriptions {
  /** By app, then by channel (no key built per lookup: the publish path looks here). */
  private subs = new Map<string, Map<string, Subscription>>()

  constructor(
    private readonly sub: RedisSubscriber,
    private readonly keys: RedisKeys,
    private readonly reads: StreamReads,
    private readonly s: { ringSize: number; ringMaxBytes: number; redisTimeoutMs: number },
    private readonly onError: (e: unknown) => void,
    /** Absent: no set is kept (REDIS_SKIP_OWN_NOTIFICATIONS off). */
    private readonly members?: Membership,
  ) {
    // after a reconnect, notifications may have been missed: catch up from the streams; the
    // channels are subscribed again, so this node takes its place in their sets again (Redis may
    // have lost it: a failover, a restart)
    sub.onShardsReady(() => {
      for (const byChannel of this.subs.values())
        for (const s of byChannel.values()) {
          this.enqueue(s, () => this.catchUp(s))
          void this.join(s)
        }
    })
    this.stopRejoin = members ? systemTimers.every(NODE_COUNTS_MS / 4, () => void this.rejoin()) : () => {}
  }

  private readonly stopRejoin: () => void
  private rejoining = false

  /** Every subscription that stands joins its channel's set again, one after the other (failures retried apart). */
  private async rejoin() {
    if (this.rejoining) return
    this.rejoining = true
    try {
      for (const byChannel of [...this.subs.values()])
        for (const s of [...byChannel.values()]) if (s.start !== undefined) await this.join(s)
    } finally {
      this.rejoining = false
    }
  }

  /** Adds this node to the channel's set (its SSUBSCRIBE stands); a failure is retried apart while the subscription lasts. */
  private join(s: Subscription): Promise<void> {
    if (!this.members || this.get(s.app, s.channel) !== s) return Promise.resolve()
    return this.members.join(s.app, s.channel).then(
      () => {},
      (e) => {
        this.onError(e)
        setTimeout(() => void this.join(s), Math.min(this.s.redisTimeoutMs, 1000))
      },
    )
  }

  /** The serial a subscription starts after: the stream's newest entry, or Redis's "now" when it has none. */
  private async begin(app: string, channel: string): Promise<{ base: string; stored: boolean }> {
    const stream = this.keys.stream(app, channel)
    const last = await this.reads.range('XREVRANGE', stream, '+', '-', 1)
    // an empty stream: the ring starts at Redis's "now" (anything before it is gone, or never was)
    return last.length ? { base: last[0]!.serial, stored: true } : { base: await this.reads.now(stream), stored: false }
  }

  /** The channel's subscription on this node, if it has one. */
  get(app: string, channel: string): Subscription | undefined {
    return this.subs.get(app)?.get(channel)
  }

  subscribe(app: string, channel: string, listener: BrokerListener): () => void {
    let byChannel = this.subs.get(app)
    if (!byChannel) this.subs.set(app, (byChannel = new Map()))
    let s = byChannel.get(channel)
    if (!s) {
      const entry: Subscription = {
        app,
        channel,
        listeners: new Set(),
        subscribed: Promise.resolve(),
        queue: Promise.resolve(),
        busy: 0,
        onMessage: (buf: Buffer) => this.onMessage(entry, buf),
      }
      // where it starts: the stream's newest entry (or Redis's "now" for an empty stream) read as
      // it begins, so no later than the position a subscriber asks for after registering
      // (Broker.position); what is appended from there until its SSUBSCRIBE stands is read from the
      // stream then (notified to no one on this node). The setup is the queue's first work: a
      // notification that comes meanwhile waits for it.
      const begun = this.begin(app, channel)
      begun.catch(() => {})
      this.enqueue(entry, async () => {
        await this.sub.sSubscribe(this.keys.notify(app, channel), entry.onMessage)
        // in the channel's set once the SSUBSCRIBE stands (not if unsubscribed meanwhile)
        void this.join(entry)
        const { base, stored } = await begun
        // nothing was delivered before (every other work waits for this one)
        entry.start = base
        // a base for gap detection and reconnect catch-up, even before the first notification
        if (stored) entry.last = base
        // what the stream held before is never handed out by this subscription
        if (entry.waiters) this.release(entry, base)
        // the ring is complete from here on
        entry.ring = new Ring(
          { minCount: this.s.ringSize, windowMs: 0, maxBytes: this.s.ringMaxBytes },
          base,
          ringCodec,
        )
        await this.catchUp(entry)
      })
      // settled (its errors reported) once that work is done and off the queue
      entry.subscribed = entry.queue
      s = entry
      byChannel.set(channel, s)
    }
    s.listeners.add(listener)
    const sub = s
    return () => {
      sub.listeners.delete(listener)
      const apps = this.subs.get(app)
      if (sub.listeners.size === 0 && apps?.get(channel) === sub) {
        apps.delete(channel)
        if (apps.size === 0) this.subs.delete(app)
        this.ended(sub)
        // out of the channel's set first, then only this subscription's listener: a newer
        // subscription to the same channel keeps its own, and joins once its SSUBSCRIBE stands
        // (the set's commands go on one connection, in order: its addition comes after)
        const unsubscribe = () =>
          this.sub.sUnsubscribe(this.keys.notify(app, channel), sub.onMessage).catch((e) => this.onError(e))
        if (this.members)
          void this.members
            .leave(app, channel)
            .catch((e) => this.onError(e))
            .then(unsubscribe)
        else void unsubscribe()
      }
    }
  }

  private enqueue(s: Subscription, work: () => Promise<void>) {
    s.busy++
    s.queue = s.queue
      .then(work)
      .catch((e) => this.onError(e))
      .finally(() => {
        s.busy--
        // the setup fixes the start without delivering: a publish held until then follows it
        if (s.held) this.releaseHeld(s)
      })
  }

  /**
   * A notification: handled now when nothing is queued and it follows what was delivered, else
   * queued. One that ends with the message this node last delivered from its own publish's answer
   * (the usual notification of a node's own publish) holds nothing new: it is passed over
   * unparsed (its messages' ids increase, so all of them were delivered).
   */
  private onMessage(s: Subscription, buf: Buffer) {
    if (s.busy > 0) return this.enqueue(s, () => this.onNotification(s, buf))
    if (s.lastId !== undefined && endsWithId(buf, s.lastId)) return
    try {
      const last = s.last
      const { prev, messages } = parseNotification(buf, last)
      if (last !== undefined && prev > last && messages.length) this.enqueue(s, () => this.fillGap(s, messages))
      else this.emit(s, messages)
    } catch (e) {
      this.onError(e)
    }
  }

  private async onNotification(s: Subscription, buf: Buffer) {
    const last = s.last
    const { prev, messages } = parseNotification(buf, last)
    if (last !== undefined && prev > last && messages.length) await this.fillGap(s, messages)
    else this.emit(s, messages)
  }

  /** The entries between the last delivered and `messages` read from the stream, then `messages`. */
  private async fillGap(s: Subscription, messages: Message[]) {
    if (s.last !== undefined) {
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

  /**
   * A publish this node made to a channel it subscribes to: its drafts, their serials as the
   * script answered (a duplicate's is an older entry's), `prev` the serial of the entry before
   * the first it appended, `ids` the stream ids those serials were made from. Delivered now when
   * that is the last one delivered and nothing is queued (as messages, their serials and
   * timestamps set, as the embedded broker does); else left to their notification. When the
   * channel was not notified (`quiet`: no other node in its set), it is delivered once the entry
   * before it is: at once when it was, else held until then (that entry another node's, whose
   * notification is on its way), and read from the stream only when it does not come in time.
   */
  published(
    s: Subscription,
    prev: string,
    drafts: MessageDraft[],
    serials: string[],
    ids: ReadonlyArray<string | number>,
    quiet = false,
  ) {
    if (s.listeners.size === 0) return
    if (s.busy === 0 && s.last !== undefined && s.last === prev) return this.deliverOwn(s, drafts, serials, ids)
    if (!quiet) return
    ;(s.held ??= []).push({ prev, drafts, serials, ids })
    this.releaseHeld(s)
    if (s.held && !s.heldTimer)
      s.heldTimer = setTimeout(() => this.heldTooLong(s), Math.min(HOLD_MS, this.s.redisTimeoutMs))
  }

  /**
   * This node's messages whose previous entry was delivered (or is the start): those not
   * delivered yet, from the drafts, in order. Nothing lies between the previous entry and them,
   * so nothing delivered after it can come between either.
   */
  private deliverOwn(s: Subscription, drafts: MessageDraft[], serials: string[], ids: ReadonlyArray<string | number>) {
    const out: Message[] = []
    let last = (s.last ?? s.start)!
    let lastId: string | undefined
    for (let i = 0; i < drafts.length; i++) {
      const serial = serials[i]
      if (serial === undefined || serial <= last) continue
      const m = drafts[i] as Message
      m.serial = last = serial
      m.timestamp = Number(serial.slice(0, serial.indexOf('-')))
      lastId = String(ids[i])
      out.push(m)
    }
    this.emit(s, out)
    if (out.length && s.last === last) s.lastId = lastId
  }

  /** Delivers the held publishes whose previous entry was delivered (or is the start), in order. */
  private releaseHeld(s: Subscription) {
    const held = s.held!
    // taken out while they are delivered: the deliveries' own calls here find none
    s.held = undefined
    let i = 0
    for (; i < held.length; i++) {
      const h = held[i]!
      const last = s.last ?? s.start
      if (last === undefined || h.prev > last) break
      this.deliverOwn(s, h.drafts, h.serials, h.ids)
    }
    if (i < held.length) s.held = i ? held.slice(i) : held
    else if (s.heldTimer) {
      clearTimeout(s.heldTimer)
      s.heldTimer = undefined
    }
  }

  /**
   * The held publishes' previous entries did not come in time: the stream is read up to the last
   * of them, in turn (the timer is cleared when the subscription ends).
   */
  private heldTooLong(s: Subscription) {
    s.heldTimer = undefined
    const held = s.held
    if (!held) return
    s.held = undefined
    this.enqueueRead(
      s,
      held.flatMap((h) => h.serials),
    )
  }

  /** A subscription ended (no listener left, or the node closing): its waiters are released, its held publishes dropped. */
  private ended(s: Subscription) {
    if (s.waiters) this.release(s)
    if (s.heldTimer) clearTimeout(s.heldTimer)
    s.held = s.heldTimer = undefined
  }

  /**
   * The entries after the last delivered up to the newest of `serials`, read in turn (see
   * `published`); one read waiting at a time, its end moved on by the publishes meanwhile.
   */
  private enqueueRead(s: Subscription, serials: string[]) {
    let upTo = serials[0]!
    for (const serial of serials) if (serial > upTo) upTo = serial
    if (s.readTo !== undefined) {
      if (upTo > s.readTo) s.readTo = upTo
      return
    }
    s.readTo = upTo
    // after the setup, the queue's first work (the start is known by then)
    this.enqueue(s, () => {
      const to = s.readTo!
      s.readTo = undefined
      return this.catchUp(s, to)
    })
  }

  /**
   * A publish to the channel failed with its outcome unknown (a timeout, a lost reply, replicas
   * that did not confirm): it may have been stored, and not notified if no other node was in
   * the channel's set; what the stream holds is read, in turn.
   */
  unsure(app: string, channel: string) {
    const s = this.get(app, channel)
    // one read waiting at a time (a Redis that fails every publish must not queue one per publish)
    if (!s || s.unsure) return
    s.unsure = true
    this.enqueue(s, () => {
      s.unsure = false
      return this.catchUp(s)
    })
  }

  /** What the stream holds after the last delivered (or the start), up to `upTo` (a serial) or its end. */
  private async catchUp(s: Subscription, upTo?: string) {
    const from = s.last ?? s.start
    if (from === undefined || (upTo !== undefined && from >= upTo)) return
    const end = upTo === undefined ? '+' : idFromSerial(upTo)
    this.emit(
      s,
      await this.reads.range('XRANGE', this.keys.stream(s.app, s.channel), `(${idFromSerial(from)}`, end, 100_000),
    )
  }

  private emit(s: Subscription, messages: Message[]) {
    const last = s.last
    // serials rise within `messages`: when the first is new, all are (no copy, nor closure)
    const fresh =
      last === undefined || !messages.length || messages[0]!.serial > last
        ? messages
        : messages.filter((m) => m.serial > last)
    if (!fresh.length) return
    s.last = fresh[fresh.length - 1]!.serial
    s.lastId = undefined
    // an ephemeral message is delivered, never kept: no resume from memory replays it
    if (s.ring) for (const m of fresh) if (!isEphemeral(m)) s.ring.push(m)
    for (const l of s.listeners) l(s.app, s.channel, fresh)
    if (s.waiters) this.release(s, s.last)
    if (s.held) this.releaseHeld(s)
  }

  /**
   * The notification of an append reaches this node apart from the script's reply (on the
   * subscriber's connection): a caller that must not answer before the append was handed to the
   * channel's listener here (a realtime publish's ACK after its echo) waits for it, about
   * REDIS_TIMEOUT_MS at most (a notification lost with the subscriber's connection is caught up
   * after its reconnect). Only its callers pay for it: a publish does not.
   */
  delivered(app: string, channel: string, serial: string): Promise<void> | undefined {
    const s = this.get(app, channel)
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

  /** Ends every subscription; this node leaves the channels' sets (for at most REDIS_TIMEOUT_MS: else their time runs out). */
  async close() {
    this.stopRejoin()
    const leaving: Promise<unknown>[] = []
    for (const byChannel of this.subs.values())
      for (const s of byChannel.values()) {
        s.listeners.clear()
        this.ended(s)
        if (this.members) leaving.push(this.members.leave(s.app, s.channel))
      }
    this.subs.clear()
    await Promise.race([Promise.allSettled(leaving), sleep(this.s.redisTimeoutMs)])
  }
}

const isEphemeral = (m: Message): boolean => (m.extras as { ephemeral?: unknown } | undefined)?.ephemeral === true
