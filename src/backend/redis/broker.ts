import { GatewayError } from '../../errors'
import { formatSerial, parseSerial } from '../../core/model/serial'
import { metrics } from '../../lib/metrics'
import type {
  Broker,
  BrokerListener,
  ChargeResult,
  PublishOptions,
  PublishResult,
  RateLimitStore,
} from '../../core/ports'
import type { HistoryQuery, Message, MessageDraft } from '../../core/types'
import { idFromSerial, messageFromEntry, packDraft, serialFromId } from './codec'
import { BUFFERS, type RedisCommander, type RedisSubscriber, type Sender } from './clients'
import { commandFailed, withTimeout } from './errors'
import type { RedisKeys } from './keys'
import { ScriptRunner } from './script-runner'
import { EPHEMERAL_PUBLISH_SCRIPT } from './lua/ephemeral-publish'
import { PublishBatcher, type BatchAnswer } from './publish-batcher'
import { ChannelSubscriptions, NODE_COUNTS_MS } from './subscriptions'
import { keySlot } from './cluster'
import { ChannelMarks, INDEX_REFRESH_MS, markDue, type Marks, type PublishKeys } from './channel-marks'

const fromMemory = metrics.counter(
  'gateway_resume_from_memory_total',
  'Event-stream resumes served from the node ring instead of the Redis stream.',
)

export interface RedisBrokerSettings {
  ringSize: number
  ringMaxBytes: number
  historyTtlMs: number
  persistedHistoryTtlMs: number
  idempotencyWindowMs: number
  redisTimeoutMs: number
  /** Replicas a publish waits for (WAIT) before it is answered; 0 answers after the master alone. */
  redisWaitReplicas?: number
  /** Redis Cluster: every script keeps to one slot (a charged publish takes two steps). */
  redisCluster?: boolean
  /** No notification where the publishing node is the channel's one subscriber, or none is (subscriptions.ts `Membership`). */
  redisSkipOwnNotifications?: boolean
}

type Entry = [Buffer, [Buffer, Buffer]]

/** Rate buckets whose key and slot a node keeps (a bucket per account and class). */
const BUCKETS_KEPT = 10_000

/** Newest entries of a channel's stream searched by `serialsOf` (the stream has no index by message id). */
const LOOKUP_SCAN = 10_000
const LOOKUP_PAGE = 1000

/**
 * A charge taken in its publish's step and answered with the publish's id alone (the batch's plain
 * form: what the bucket holds is not told, and only a refusal's answer reads it).
 */
const TAKEN: ChargeResult = Object.freeze({ ok: true, remaining: NaN, retryAfterMs: 0 })

/** A step that did nothing leaves the index entry and the expiry due, for the next publish. */
function giveMarksBack(m: Marks, due: number | undefined, expireNow: boolean): void {
  if (due !== undefined) m.indexed = 0
  if (expireNow) m.expired = 0
}

/**
 * Broker on Redis Streams: one stream per channel, appended by one atomic script that also
 * notifies the nodes subscribed to the channel (lua/log.ts; sharded pub/sub, SSUBSCRIBE: one
 * subscription per channel with local subscribers, served on a cluster by the master owning the
 * channel's slot). Here: the append (publish-batcher.ts) and the reads of the stream; the
 * subscriptions, their gap fill and reconnect catch-up are subscriptions.ts.
 */
export class RedisBroker implements Broker {
  private readonly subs: ChannelSubscriptions
  private readonly batcher: PublishBatcher
  private readonly ephemeralScript: ScriptRunner
  /** Per channel, when this node last wrote its entry in its app's index and set its stream's expiry. */
  private readonly marks = new ChannelMarks()
  /** Rate buckets charged by this node's publishes (`bucketOf`). */
  private readonly buckets = new Map<string, { key: string; slot: number }>()
  private readonly send: Sender

  constructor(
    private readonly cmd: RedisCommander,
    sub: RedisSubscriber,
    private readonly keys: RedisKeys,
    private readonly s: RedisBrokerSettings,
    onError: (e: unknown) => void,
    fast: Sender | undefined,
    /** Sends a command to the master owning a key (WAIT after the publish script). */
    private readonly sendTo: ((key: string, args: string[]) => Promise<unknown>) | undefined,
    /** The shard (master) owning a key: publishes are batched per shard. */
    private readonly shardOf: ((key: string, slot?: number) => string) | undefined,
    /** Takes a publish's charge where its publish step cannot (on a cluster, a bucket on another master than the channel; ephemeral publishes). */
    private readonly limits: RateLimitStore,
    /** This node's id among the nodes subscribed to a channel (keys.ts `nodes`). */
    node: string,
  ) {
    this.send = fast ?? ((args) => cmd.sendCommand(args))
    const wait = s.redisWaitReplicas ?? 0
    this.batcher = new PublishBatcher(this.send, {
      idempotencyWindowMs: s.idempotencyWindowMs,
      redisTimeoutMs: s.redisTimeoutMs,
      cluster: !!s.redisCluster,
      shardOf,
      afterWrite: wait > 0 ? (stream) => this.waitReplicas(stream, wait) : undefined,
      nodeId: s.redisSkipOwnNotifications ? node : undefined,
    })
    this.ephemeralScript = new ScriptRunner(this.send, EPHEMERAL_PUBLISH_SCRIPT)
    this.subs = new ChannelSubscriptions(
      sub,
      keys,
      { range: (c, key, a, b, n) => this.range(c, key, a, b, n), now: (stream) => this.redisNow(stream) },
      s,
      onError,
      // on the command connection (one per master, in order), not the publish path's; none
      // without REDIS_SKIP_OWN_NOTIFICATIONS (every publish is notified: no set is read)
      s.redisSkipOwnNotifications
        ? {
            join: (app, channel) => this.join(keys.nodes(app, channel), node),
            leave: (app, channel) => this.t(cmd.sendCommand(['ZREM', keys.nodes(app, channel), node])),
          }
        : undefined,
    )
  }

  /**
   * This node into a channel's set until NODE_COUNTS_MS from now (by its clock: a skew of seconds
   * is nothing beside it), the ids whose time ran out dropped, the set kept as long: three
   * commands sent together, on the command connection (one per master, in order).
   */
  private join(set: string, node: string) {
    const now = Date.now()
    return this.t(
      Promise.all([
        this.cmd.sendCommand(['ZREMRANGEBYSCORE', set, '-inf', `(${now}`]),
        this.cmd.sendCommand(['ZADD', set, String(now + NODE_COUNTS_MS), node]),
        this.cmd.sendCommand(['PEXPIRE', set, String(NODE_COUNTS_MS)]),
      ]),
    )
  }

  private t<T>(p: Promise<T>) {
    return withTimeout(p, this.s.redisTimeoutMs)
  }
  private ttl(opts: PublishOptions) {
    return opts.persisted ? this.s.persistedHistoryTtlMs : this.s.historyTtlMs
  }

  /**
   * A publish in up to three steps on Redis Cluster: the charge to the account's rate bucket first
   * (refused: nothing is appended), then the channel's atomic append-and-notify step, with the
   * app's channel index refreshed beside it (sent together, one round trip). A charge whose
   * publish then fails stays charged. The charge is taken inside the publish's step instead when
   * the bucket is on the channel's master (the batch script reaches keys of other slots of its
   * master, as it does the streams of a batch), and always on one redis-server, where the index is
   * too (one round trip). The append step goes through the PublishBatcher: publishes made while
   * their shard has a call in flight share one script call, each still answered alone.
   */
  publish(app: string, channel: string, drafts: MessageDraft[], opts: PublishOptions): Promise<PublishResult> {
    return this.append(app, channel, drafts, opts, true)
  }

  /** `publish`, its charge in its step where it can be (`inStepIfHere`), else apart first. */
  private async append(
    app: string,
    channel: string,
    drafts: MessageDraft[],
    opts: PublishOptions,
    inStepIfHere: boolean,
  ): Promise<PublishResult> {
    const c = opts.charge
    const cluster = !!this.s.redisCluster
    const m = this.marks.of(app, channel)
    const k = (m.keys ??= this.publishKeys(app, channel))
    const stream = k.stream
    const bucket = c && this.bucketOf(c.key)
    // the charge in the publish's own step: one redis-server, or the bucket on the channel's master
    const chargeInStep =
      bucket !== undefined &&
      !opts.ephemeral &&
      (!cluster ||
        (inStepIfHere &&
          this.shardOf !== undefined &&
          this.shardOf(bucket.key, bucket.slot) === this.shardOf(stream, k.slot)))
    let charged: PublishResult['charged']
    if (c && !chargeInStep) {
      // batched per bucket with the account's other charges of this node (rate-limit-store.ts)
      charged = await this.limits.take(c)
      if (!charged.ok) return { serials: [], appended: 0, charged }
    }
    if (opts.ephemeral) {
      const bodies = drafts.map(packDraft)
      const ids = await this.t(
        this.ephemeralScript.run<string[]>(
          [stream],
          [k.notify, String(this.ttl(opts)), String(drafts.length), ...bodies],
        ),
      )
      return { serials: ids.map((id) => serialFromId(String(id))), appended: ids.length, charged }
    }
    const now = Date.now()
    // the channel index: in the publish's step on one redis-server, a step of its own on a cluster
    const index = cluster ? this.index(app, channel, m, now) : undefined
    const due = cluster ? undefined : markDue(m, 'indexed', now)
    // with REDIS_WAIT_REPLICAS every publish writes, so that its WAIT covers what it stored
    const expireNow = (this.s.redisWaitReplicas ?? 0) > 0 || markDue(m, 'expired', now) !== undefined
    const ttlMs = this.ttl(opts)
    // a loop, not a map: no closure per publish
    const messages: Array<[string, Buffer]> = []
    for (const d of drafts) messages.push([opts.clientIds ? d.id : '', packDraft(d)])
    let answer: BatchAnswer
    try {
      // bounded by the batcher: answered within REDIS_TIMEOUT_MS, its errors 503 unless a GatewayError
      answer = await this.batcher.publish({
        stream,
        slot: k.slot,
        lastId: k.lastId,
        notify: k.notify,
        ttlMs,
        idemPrefix: k.idemPrefix,
        channel,
        messages,
        charge: chargeInStep ? { bucket: bucket!.key, charge: c! } : undefined,
        index: due === undefined ? undefined : { key: this.keys.channels(app), score: due },
        expireMs: ttlMs + INDEX_REFRESH_MS,
        expireNow,
      })
    } catch (e) {
      giveMarksBack(m, due, expireNow)
      // stored or not: when stored and not notified (no other node in the channel's set), read
      if (this.s.redisSkipOwnNotifications) this.subs.unsure(app, channel)
      throw e
    }
    const reply = answer.reply
    // the bucket was not on the channel's master after all (the cluster's slots moved since this
    // node last read them): nothing was done; charged apart, whose call follows the move
    if (Number(reply[0]) === -3) {
      giveMarksBack(m, due, expireNow)
      return this.append(app, channel, drafts, opts, false)
    }
    if (Number(reply[0]) === -1) {
      // refused: nothing appended, the index not refreshed
      if (due !== undefined) m.indexed = 0
      return {
        serials: [],
        appended: 0,
        charged: { ok: false, remaining: Number(reply[1]) / 1000, retryAfterMs: Number(reply[2]) },
      }
    }
    if (chargeInStep)
      charged = answer.plain ? TAKEN : { ok: true, remaining: Number(reply.pop()) / 1000, retryAfterMs: 0 }
    const fresh = Number(reply[0])
    const serials: string[] = []
    for (let i = 1; i < reply.length; i++) serials.push(serialFromId(String(reply[i])))
    // this node subscribes to the channel: it holds what it appended, delivered without its notification's decoding
    const sub = fresh > 0 && answer.prev !== undefined ? this.subs.get(app, channel) : undefined
    if (sub) this.subs.published(sub, serialFromId(answer.prev!), drafts, serials, reply.slice(1), answer.quiet)
    const failed = index && (await this.t(index))
    if (failed) throw commandFailed(failed)
    return { serials, appended: fresh, charged }
  }

  /**
   * A rate bucket's key and slot, kept by its charge key (the rate limiter makes one string per
   * bucket); forgotten all at once past BUCKETS_KEPT buckets.
   */
  private bucketOf(chargeKey: string): { key: string; slot: number } {
    let b = this.buckets.get(chargeKey)
    if (!b) {
      if (this.buckets.size >= BUCKETS_KEPT) this.buckets.clear()
      const key = this.keys.bucket(chargeKey)
      this.buckets.set(chargeKey, (b = { key, slot: keySlot(key) }))
    }
    return b
  }

  /** The keys of a channel that its publishes name (kept with its marks). */
  private publishKeys(app: string, channel: string): PublishKeys {
    const k = this.keys
    const stream = k.stream(app, channel)
    return {
      stream,
      slot: keySlot(stream),
      lastId: k.lastId(app, channel),
      notify: k.notify(app, channel),
      idemPrefix: k.idemPrefix(app, channel),
    }
  }

  /**
   * Refreshes the channel's entry in its app's index unless this node did within INDEX_REFRESH_MS;
   * resolves with the error, if any (it is awaited after the publish).
   */
  private index(app: string, channel: string, m: Marks, now: number): Promise<unknown> | undefined {
    if (markDue(m, 'indexed', now) === undefined) return undefined
    return this.send(['ZADD', this.keys.channels(app), String(now), channel]).then(
      () => undefined,
      (e) => {
        m.indexed = 0
        return e
      },
    )
  }

  /**
   * WAIT on the connection (and, on a cluster, the master) that ran the publish: answers once
   * `n` replicas acknowledged every write before it. Fewer within the timeout: 503, outcome unknown.
   */
  private async waitReplicas(stream: string, n: number) {
    const timeout = Math.max(1, this.s.redisTimeoutMs - 100)
    const args = ['WAIT', String(n), String(timeout)]
    const acked = Number(await this.t(this.sendTo ? this.sendTo(stream, args) : this.send(args)))
    if (acked < n)
      throw new GatewayError(
        50003,
        `Service unavailable: the message was stored but only ${acked} of ${n} replicas confirmed it in time; it may be lost if its Redis fails. Retry with the same message ids: a message id is published only once`,
      )
  }

  private async range(
    cmd: 'XRANGE' | 'XREVRANGE',
    key: string,
    a: string,
    b: string,
    count: number,
  ): Promise<Message[]> {
    const entries = await this.t(this.cmd.sendCommand<Entry[]>([cmd, key, a, b, 'COUNT', String(count)], BUFFERS))
    return entries.map(([id, fields]) => messageFromEntry(id.toString(), fields[1]))
  }

  /** History: the stream's channel messages (other entry kinds only when asked), paged by serial. */
  async history(app: string, channel: string, q: HistoryQuery, opts: PublishOptions): Promise<Message[]> {
    const min = Math.max(q.start ?? 0, Date.now() - this.ttl(opts))
    const fwd = q.direction === 'forwards'
    let lo = fwd && q.cursor ? `(${idFromSerial(q.cursor)}` : `${min}-0`
    let hi =
      !fwd && q.cursor ? `(${idFromSerial(q.cursor)}` : q.end !== undefined ? `${q.end}-18446744073709551615` : '+'
    const key = this.keys.stream(app, channel)
    const out: Message[] = []
    // other kinds share the stream: read on past them until the page is full or the range ends
    while (out.length < q.limit) {
      const want = q.limit - out.length
      const got = fwd ? await this.range('XRANGE', key, lo, hi, want) : await this.range('XREVRANGE', key, hi, lo, want)
      for (const m of got)
        if (!m.kind || q.entries === 'all' || (q.entries === 'versions' && m.kind === 'mutation')) out.push(m)
      if (got.length < want) break
      const edge = `(${idFromSerial(got[got.length - 1]!.serial)}`
      if (fwd) lo = edge
      else hi = edge
    }
    return out.filter((m) => m.timestamp >= min && (q.end === undefined || m.timestamp <= q.end))
  }

  /**
   * Read from the stream, newest first, back to the idempotency window or LOOKUP_SCAN entries: a
   * body is decoded only when it holds the bytes the ids looked for begin with (a connection's
   * ids share `<connectionId>:`), so the cost is one search per entry however many ids are asked.
   */
  async serialsOf(app: string, channel: string, ids: string[], _opts: PublishOptions): Promise<Map<string, string>> {
    const found = new Map<string, string>()
    if (ids.length === 0) return found
    const wanted = new Set(ids)
    const prefix = Buffer.from(commonPrefix(ids))
    const key = this.keys.stream(app, channel)
    const min = `${Date.now() - this.s.idempotencyWindowMs}-0`
    let hi = '+'
    for (let scanned = 0; scanned < LOOKUP_SCAN && found.size < wanted.size;) {
      const cmd = ['XREVRANGE', key, hi, min, 'COUNT', String(LOOKUP_PAGE)]
      const entries = await this.t(this.cmd.sendCommand<Entry[]>(cmd, BUFFERS))
      for (const [id, fields] of entries) {
        if (fields[1].indexOf(prefix) < 0) continue
        const m = messageFromEntry(id.toString(), fields[1])
        if ((!m.kind || m.kind === 'object') && wanted.has(m.id) && !found.has(m.id)) found.set(m.id, m.serial)
      }
      scanned += entries.length
      if (entries.length < LOOKUP_PAGE) break
      hi = `(${entries[entries.length - 1]![0].toString()}`
    }
    return found
  }

  async position(app: string, channel: string): Promise<string> {
    await this.subs.get(app, channel)?.subscribed
    const last = await this.range('XREVRANGE', this.keys.stream(app, channel), '+', '-', 1)
    return last.length ? last[0]!.serial : this.redisNow(this.keys.stream(app, channel))
  }

  /** A serial just below any id Redis (the master owning `stream`, on a cluster) would assign from now on. */
  private async redisNow(stream: string): Promise<string> {
    const time = this.sendTo ? this.sendTo(stream, ['TIME']) : this.cmd.sendCommand(['TIME'])
    const [sec, usec] = (await this.t(time)) as string[]
    return formatSerial(Number(sec) * 1000 + Math.floor(Number(usec) / 1000) - 1, 999_999)
  }

  async readAfter(
    app: string,
    channel: string,
    after: string,
    limit: number,
  ): Promise<{ messages: Message[]; gap: boolean }> {
    const sub = this.subs.get(app, channel)
    await sub?.subscribed
    const ring = sub?.ring
    if (ring) {
      ring.expire(Date.now() - this.s.historyTtlMs)
      if (after >= ring.floor) {
        fromMemory.inc()
        return { messages: ring.after(after, limit), gap: false }
      }
    }
    const key = this.keys.stream(app, channel)
    const messages = await this.range('XRANGE', key, `(${idFromSerial(after)}`, '+', limit)
    let gap: boolean
    try {
      const info = await this.t(this.cmd.sendCommand<Array<string | unknown>>(['XINFO', 'STREAM', key]))
      const i = info.indexOf('max-deleted-entry-id')
      gap = i >= 0 && serialFromId(String(info[i + 1])) > after
    } catch {
      // no stream: nothing retained; a position older than the retention window may have lost messages
      gap = (parseSerial(after)?.ms ?? 0) < Date.now() - this.s.historyTtlMs
    }
    return { messages, gap }
  }

  async channels(app: string, prefix: string, after: string | undefined, limit: number): Promise<string[]> {
    const names = await this.t(
      this.cmd.sendCommand<string[]>([
        'ZRANGEBYSCORE',
        this.keys.channels(app),
        String(Date.now() - this.s.historyTtlMs),
        '+inf',
      ]),
    )
    return names
      .filter((n) => n.startsWith(prefix) && (after === undefined || n > after))
      .sort()
      .slice(0, limit)
  }

  subscribe(app: string, channel: string, listener: BrokerListener): () => void {
    return this.subs.subscribe(app, channel, listener)
  }

  delivered(app: string, channel: string, serial: string): Promise<void> | undefined {
    return this.subs.delivered(app, channel, serial)
  }

  /** Its rings are caches of what it delivered, per subscribed channel: not reported (the streams hold history). */
  memory() {
    return { channels: 0, messages: 0, bytes: 0 }
  }

  async ready() {
    try {
      return String(await this.t(this.cmd.sendCommand(['PING']))) === 'PONG'
    } catch (e) {
      if (e instanceof GatewayError) return false
      throw e
    }
  }

  async close() {
    await this.subs.close()
  }
}

/** The longest string every one of `ids` begins with. */
function commonPrefix(ids: string[]): string {
  let prefix = ids[0]!
  for (const id of ids) {
    let i = 0
    while (i < prefix.length && i < id.length && prefix.charCodeAt(i) === id.charCodeAt(i)) i++
    prefix = prefix.slice(0, i)
  }
  return prefix
}
