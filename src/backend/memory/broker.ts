import { formatSerial, advanceSerial, parseSerial } from '../../core/model/serial'
import { Ring, type RetentionPolicy } from '../shared/ring'
import { ringCodec } from '../shared/ring-codec'
import type { Broker, BrokerListener, Clock, PublishOptions, PublishResult, SyncAppend } from '../../core/ports'
import type { HistoryQuery, Message, MessageDraft } from '../../core/types'
import type { SqliteMessageLog } from './message-log'
import type { MemoryRateLimitStore } from './rate-limit-store'
import type { ChannelSnapshot, RingSnapshot } from './ring-snapshot'

export interface MemoryBrokerSettings {
  ringSize: number
  resumeWindowMs: number
  ringMaxBytes: number
  ringTotalMaxBytes: number
  historyTtlMs: number
  persistedHistoryTtlMs: number
  idempotencyWindowMs: number
  channelIdleMs: number
}

/**
 * Client-supplied ids remembered per channel for the idempotency window, at most: beyond it the
 * oldest are forgotten early (with rate limits on, an account cannot publish this many in the
 * default window).
 */
const MAX_SEEN_IDS = 250_000

/** Newest entries of a channel that is not persisted searched by `serialsOf` (its ring: each is decoded). */
const LOOKUP_SCAN = 1000

interface ChannelState {
  ring: Ring
  lastMs: number
  lastSeq: number
  /** Client-supplied ids seen within the idempotency window, insertion-ordered (oldest first). */
  seen: Map<string, { serial: string; at: number }>
  /**
   * `seen` holds every client-supplied id published since then (ms): the broker's start (before
   * it, another process published), raised when the count bound forgets an id early. Ids older
   * are looked up in the durable log (persisted channels) while the window reaches back past it.
   */
  seenSince: number
  listeners: Set<BrokerListener>
  lastActivity: number
}

/**
 * Single-node broker: serials, idempotency and delivery in memory; persisted channels are also
 * written to SQLite before the publish resolves. Delivery to listeners is synchronous, in order.
 */
export class MemoryBroker implements Broker, SyncAppend {
  /** appId -> channel -> state (nested maps: no key concatenation on the publish path). */
  private apps = new Map<string, Map<string, ChannelState>>()
  private sweeper: ReturnType<typeof setInterval>
  private readonly retention: RetentionPolicy
  /** Bytes all rings hold, kept as they change (recounted by every sweep). */
  private ringBytes = 0
  private readonly startedAt: number

  constructor(
    private readonly log: SqliteMessageLog,
    private readonly clock: Clock,
    private readonly s: MemoryBrokerSettings,
    /** The backend's buckets: a publish's rate-limit charge is taken in the same step as its append. */
    private readonly limits: MemoryRateLimitStore,
    private readonly snapshot?: RingSnapshot,
  ) {
    this.retention = { minCount: s.ringSize, windowMs: s.resumeWindowMs, maxBytes: s.ringMaxBytes }
    this.startedAt = clock.now()
    this.sweeper = setInterval(() => this.sweep(), Math.min(10_000, s.channelIdleMs))
    this.sweeper.unref?.()
    for (const c of snapshot?.take() ?? []) this.restore(c)
  }

  /** A channel as the last graceful shutdown left it (the broker is fresh: nothing published yet). */
  private restore(snap: ChannelSnapshot) {
    const c = this.state(snap.app, snap.channel)
    c.ring.floor = snap.floor // pushes past the capacity raise it again
    const windowStart = this.startedAt - this.s.idempotencyWindowMs
    for (const m of snap.messages) {
      c.ring.push(m)
      // a retry of a publish made before the restart is recognised (only client ids are looked up here)
      if (!m.kind && m.timestamp >= windowStart) c.seen.set(m.id, { serial: m.serial, at: m.timestamp })
    }
    this.ringBytes += c.ring.byteSize
    const last = parseSerial(c.ring.position())
    if (last && (last.ms > c.lastMs || (last.ms === c.lastMs && last.seq > c.lastSeq))) {
      c.lastMs = last.ms
      c.lastSeq = last.seq
    }
  }

  private state(appId: string, channel: string): ChannelState {
    let app = this.apps.get(appId)
    if (!app) this.apps.set(appId, (app = new Map()))
    let c = app.get(channel)
    if (!c) {
      const now = this.clock.now()
      // serials continue after what SQLite holds (persisted channels), so they never repeat
      const last = this.log.lastSerial(appId, channel)
      const parsed = last ? parseSerial(last) : undefined
      const floor = last ?? formatSerial(now - 1, 999_999)
      c = {
        ring: new Ring(this.retention, floor, ringCodec),
        lastMs: parsed?.ms ?? 0,
        lastSeq: parsed?.seq ?? -1,
        seen: new Map(),
        seenSince: this.startedAt,
        listeners: new Set(),
        lastActivity: now,
      }
      app.set(channel, c)
    }
    return c
  }

  async publish(appId: string, channel: string, drafts: MessageDraft[], opts: PublishOptions): Promise<PublishResult> {
    return this.publishNow(appId, channel, drafts, opts)
  }

  publishNow(appId: string, channel: string, drafts: MessageDraft[], opts: PublishOptions): PublishResult {
    const charged = opts.charge && this.limits.takeNow(opts.charge)
    if (charged && !charged.ok) return { serials: [], appended: 0, charged }
    const c = this.state(appId, channel)
    const now = this.clock.now()
    c.lastActivity = now
    const windowStart = now - this.s.idempotencyWindowMs
    if (c.seen.size) {
      for (const [id, v] of c.seen) {
        if (v.at >= windowStart) break
        c.seen.delete(id)
      }
    }
    const serials: string[] = []
    // the drafts themselves while every one is appended (the common case: no array per publish)
    let skipped: Message[] | undefined
    for (let i = 0; i < drafts.length; i++) {
      const d = drafts[i]!
      const dup = opts.clientIds
        ? (c.seen.get(d.id)?.serial ?? this.logged(appId, channel, c, d.id, opts, windowStart))
        : undefined
      if (dup) {
        serials.push(dup)
        skipped ??= drafts.slice(0, i) as Message[]
        continue
      }
      advanceSerial(c, now)
      const m = d as Message
      m.serial = formatSerial(c.lastMs, c.lastSeq)
      m.timestamp = now
      serials.push(m.serial)
      skipped?.push(m)
      if (opts.clientIds) {
        c.seen.set(m.id, { serial: m.serial, at: now })
        // bounded in count as well as time (ids are bounded in length): the oldest go first
        if (c.seen.size > MAX_SEEN_IDS) {
          const [oldest, v] = c.seen.entries().next().value!
          c.seen.delete(oldest)
          if (v.at >= windowStart) c.seenSince = Math.max(c.seenSince, v.at + 1)
        }
      }
    }
    const appended = skipped ?? (drafts as Message[])
    if (appended.length === 0) return { serials, appended: 0, charged }
    // ephemeral: handed on live, kept nowhere (their serials stay in order with the stored ones)
    if (opts.ephemeral) {
      this.deliver(c, appId, channel, appended)
      return { serials, appended: appended.length, charged, at: now }
    }
    // the durable log is message history: other kinds live in the ring (resume) only
    if (opts.persisted) this.log.append(appId, channel, messagesOnly(appended), opts.findable)
    const before = c.ring.byteSize
    // their serials are consecutive, ending at the channel's last: the ring takes them as numbers
    const n = appended.length
    for (let i = 0; i < n; i++) c.ring.push(appended[i]!, c.lastMs, c.lastSeq - n + 1 + i)
    this.ringBytes += c.ring.byteSize - before
    if (this.ringBytes > this.s.ringTotalMaxBytes) this.overBudget(c.ring)
    this.deliver(c, appId, channel, appended)
    return { serials, appended: appended.length, charged, at: now }
  }

  /** Hands appended messages to the channel's listeners (no iterator made for a channel without any). */
  private deliver(c: ChannelState, appId: string, channel: string, appended: Message[]) {
    if (c.listeners.size) for (const l of c.listeners) l(appId, channel, appended)
  }

  /**
   * The serial of a client-supplied id `seen` cannot vouch for (published before this process
   * started, or forgotten early), from the durable log: a retry of a publish made before a crash
   * is not appended again. Nothing is read while `seen` covers the window (the common case).
   */
  private logged(
    appId: string,
    channel: string,
    c: ChannelState,
    id: string,
    opts: PublishOptions,
    windowStart: number,
  ): string | undefined {
    if (!opts.persisted || c.seenSince <= windowStart) return undefined
    return this.log.serialOf(appId, channel, id, windowStart)
  }

  async serialsOf(appId: string, channel: string, ids: string[], opts: PublishOptions): Promise<Map<string, string>> {
    const found = new Map<string, string>()
    const windowStart = this.clock.now() - this.s.idempotencyWindowMs
    if (opts.persisted) {
      for (const id of ids) {
        const serial = this.log.serialOf(appId, channel, id, windowStart)
        if (serial) found.set(id, serial)
      }
      return found
    }
    // not persisted: what the ring holds (a crash lost the rest, delivered or not)
    const ring = this.apps.get(appId)?.get(channel)?.ring
    if (!ring) return found
    const wanted = new Set(ids)
    for (let i = ring.size - 1; i >= 0 && i >= ring.size - LOOKUP_SCAN && found.size < wanted.size; i--) {
      if (ring.timestampAt(i) < windowStart) break
      const m = ring.at(i)
      if ((!m.kind || m.kind === 'object') && wanted.has(m.id)) found.set(m.id, m.serial)
    }
    return found
  }

  async history(appId: string, channel: string, q: HistoryQuery, opts: PublishOptions): Promise<Message[]> {
    const now = this.clock.now()
    if (opts.persisted) return this.log.query(appId, channel, q, now - this.s.persistedHistoryTtlMs)
    const c = this.apps.get(appId)?.get(channel)
    return c ? c.ring.query(q, now - this.s.historyTtlMs) : []
  }

  async position(appId: string, channel: string): Promise<string> {
    return this.state(appId, channel).ring.position()
  }

  async readAfter(
    appId: string,
    channel: string,
    after: string,
    limit: number,
  ): Promise<{ messages: Message[]; gap: boolean }> {
    const ring = this.state(appId, channel).ring
    ring.expire(this.clock.now() - this.s.historyTtlMs)
    return { messages: ring.after(after, limit), gap: after < ring.floor }
  }

  async channels(appId: string, prefix: string, after: string | undefined, limit: number): Promise<string[]> {
    const now = this.clock.now()
    const names = new Set<string>()
    for (const [name, c] of this.apps.get(appId) ?? []) {
      const live =
        c.listeners.size > 0 || (c.ring.size > 0 && c.ring.timestampAt(c.ring.size - 1) >= now - this.s.historyTtlMs)
      if (live && name.startsWith(prefix) && (after === undefined || name > after)) names.add(name)
    }
    for (const name of this.log.channels(appId, after ?? prefix, now - this.s.persistedHistoryTtlMs, limit + 1)) {
      if (name.startsWith(prefix) && (after === undefined || name > after)) names.add(name)
    }
    return [...names].sort().slice(0, limit)
  }

  subscribe(appId: string, channel: string, listener: BrokerListener): () => void {
    const c = this.state(appId, channel)
    c.listeners.add(listener)
    return () => {
      c.listeners.delete(listener)
      c.lastActivity = this.clock.now()
    }
  }

  /** Appends are handed to the listeners within the append: nothing to wait for. */
  delivered(): undefined {
    return undefined
  }

  memory() {
    let channels = 0
    let messages = 0
    let bytes = 0
    for (const app of this.apps.values()) {
      for (const c of app.values()) {
        channels++
        messages += c.ring.size
        bytes += c.ring.byteSize
      }
    }
    return { channels, messages, bytes }
  }

  /**
   * All rings together hold more than RING_TOTAL_MAX_BYTES: the ring just pushed to gives up
   * its window's extra; if that is not enough, every ring does, the largest first, until the
   * total is under the cap (what RING_SIZE keeps of each is never shed).
   */
  private overBudget(pushed: Ring) {
    const before = pushed.byteSize
    pushed.shed()
    this.ringBytes -= before - pushed.byteSize
    if (this.ringBytes <= this.s.ringTotalMaxBytes) return
    const rings: Ring[] = []
    for (const app of this.apps.values()) for (const c of app.values()) rings.push(c.ring)
    rings.sort((a, b) => b.byteSize - a.byteSize)
    for (const r of rings) {
      if (this.ringBytes <= this.s.ringTotalMaxBytes) break
      const had = r.byteSize
      r.shed()
      this.ringBytes -= had - r.byteSize
    }
  }

  /** Evicts idle channels and expired history from memory and SQLite. */
  sweep(): void {
    const now = this.clock.now()
    const keepFor = Math.max(this.s.channelIdleMs, this.s.historyTtlMs, this.s.idempotencyWindowMs)
    let bytes = 0
    for (const [appId, app] of this.apps) {
      for (const [name, c] of app) {
        c.ring.expire(now - this.s.historyTtlMs)
        if (c.listeners.size === 0 && c.lastActivity < now - keepFor) app.delete(name)
        else bytes += c.ring.byteSize
      }
      if (app.size === 0) this.apps.delete(appId)
    }
    this.ringBytes = bytes
    this.log.prune(now - this.s.persistedHistoryTtlMs)
  }

  async ready() {
    return true
  }

  /** Stops the sweeper and saves every ring (graceful shutdown), so the next start resumes exactly. */
  async close() {
    clearInterval(this.sweeper)
    if (!this.snapshot) return
    const now = this.clock.now()
    const all: ChannelSnapshot[] = []
    for (const [app, channels] of this.apps) {
      for (const [channel, c] of channels) {
        c.ring.expire(now - this.s.historyTtlMs)
        const messages: Message[] = []
        for (let i = 0; i < c.ring.size; i++) messages.push(c.ring.at(i))
        if (messages.length) all.push({ app, channel, floor: c.ring.floor, messages })
      }
    }
    this.snapshot.save(all)
  }
}

/** The channel messages of `entries` (the same array when it holds nothing else). */
const messagesOnly = (entries: Message[]): Message[] =>
  entries.some((m) => m.kind) ? entries.filter((m) => !m.kind) : entries
