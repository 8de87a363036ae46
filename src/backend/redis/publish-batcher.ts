import type { Charge } from '../../core/ports'
import { chargeArgs } from './lua/rate-limit'
import { BATCH_PUBLISH_SCRIPT, CLUSTER_BATCH_PUBLISH_SCRIPT } from './lua/batch-publish'
import { commandAnswered, commandFailed, commandTimedOut } from './errors'
import type { Sender } from './clients'
import { ScriptRunner } from './script-runner'
import { settleWithin } from '../../lib/sleep'
import { capture, made } from '../../lib/capture'

/** One publish as the batch script takes it. */
export interface BatchedPublish {
  stream: string
  /** The stream's cluster slot (every key of the channel has it). */
  slot: number
  /** The channel's last id key (kept by every script that appends to the stream). */
  lastId: string
  notify: string
  ttlMs: number
  idemPrefix: string
  channel: string
  /** Per message: client id ('' when server-generated) and msgpack body. */
  messages: Array<[string, Buffer]>
  /** The rate-limit charge taken in the same step (one redis-server only: the bucket is another slot). */
  charge?: { bucket: string; charge: Charge }
  /** The app's channel index to refresh in the same step (one redis-server only). */
  index?: { key: string; score: number }
  /** The stream's expiry (ms), and whether to set it now (else only when every message was a duplicate). */
  expireMs: number
  expireNow: boolean
}

/** A channel of a batch as its call describes it: its number (1..S), its first publish, what any of its publishes asks. */
interface Described {
  n: string
  p: BatchedPublish
  due: boolean
  index?: BatchedPublish['index']
  ids: boolean
}

/** A bucket that charges a call's plain publishes: its number (1..B), its first charge's terms, the latest `now` of them. */
interface Terms {
  j: number
  rate: number
  burst: number
  now: number
}

/**
 * The script's answer to one publish: `{ fresh, ...ids[, remaining] }`, `{ -1, remaining,
 * retryAfterMs }`, `{ -3 }` (its charge's bucket is on another master: nothing done).
 */
export type BatchReply = Array<number | string>

/** A publish's answer, and the stream id of its channel's entry before its first new message (when it appended). */
export interface BatchAnswer {
  reply: BatchReply
  prev?: string
  /** Answered its id alone (`reply` is `[1, id]`): a charge it carried was taken, what its bucket holds not told. */
  plain?: true
  /** Its channel was not notified (no other node subscribes to it): this node delivers what it appended. */
  quiet?: true
}

const BANG = '!'.charCodeAt(0)

/** One message, no client id: the plain form, when it carries no charge or one of 1 on its bucket's terms. */
const single = (p: BatchedPublish): boolean => p.messages.length === 1 && p.messages[0]![0] === ''

/**
 * A single message's charge in the plain form: -j, its bucket's number among those of the call
 * (the bucket's terms are its first such charge's), or 2 (the general form) when its cost is not
 * 1 or its terms differ from the bucket's.
 */
function chargedPlain({ bucket, charge }: NonNullable<BatchedPublish['charge']>, buckets: Map<string, Terms>): number {
  if (charge.cost !== 1) return 2
  let t = buckets.get(bucket)
  if (!t) buckets.set(bucket, (t = { j: buckets.size + 1, rate: charge.rate, burst: charge.burst, now: charge.now }))
  else if (t.rate !== charge.rate || t.burst !== charge.burst) return 2
  else t.now = Math.max(t.now, charge.now)
  return -t.j
}

/** At most this many publishes, or about this many bytes of bodies, in one script call. */
const MAX_PUBLISHES = 256
const MAX_BYTES = 4 << 20

/**
 * A request waiting for its group commit (a publish here, a rate-limit charge in
 * rate-limit-store.ts): what it asks, when it was made, and how it is answered.
 */
export interface Waiting<P, A> {
  p: P
  /** When it was made (`performance.now()`): it is answered within REDIS_TIMEOUT_MS of this. */
  at: number
  resolve(a: A): void
  reject(e: unknown): void
}

type Pending = Waiting<BatchedPublish, BatchAnswer>

interface Shard {
  items: Pending[]
  /** Script calls of this shard sent and not answered yet. */
  inFlight: number
  scheduled: boolean
}

/** What a batch's deadline rejects with (told apart from the call's own errors: a cluster's redirections are read). */
const TIMED_OUT = Symbol('batch deadline')
const timedOut = () => TIMED_OUT

/** Script calls in flight per shard: publishes made meanwhile wait and go together in the next. */
const MAX_IN_FLIGHT = 1

/** Replies that say the batch never ran because its keys are not (all) on the master it reached. */
const MOVED = /CROSSSLOT|MOVED|ASK|TRYAGAIN|CLUSTERDOWN|hash to the same slot|slot/i

/**
 * Batched publishes (group commit): a publish goes to Redis at once when its shard (all of one
 * redis-server; a master of a cluster, by `shardOf`) has no script call in flight; otherwise it
 * waits for that call's answer and goes with every publish made meanwhile, in one script call, in
 * the order they were made (at most MAX_PUBLISHES or MAX_BYTES a call). So an idle node adds no
 * delay, and a busy one sends a few large calls instead of many small ones. A publish's promise
 * settles with its own reply or error (the script runs each under pcall), so one bad publish
 * never fails its batch-mates; an error of the whole call (a timeout, a lost connection) is every
 * member's, as it would be for each alone. With `afterWrite` (WAIT, REDIS_WAIT_REPLICAS), one
 * WAIT after the batch covers all of its writes. Each publish's write is answered within
 * REDIS_TIMEOUT_MS of the publish being made, queueing included (a batch's deadline is its oldest
 * member's), with its errors as the client is told them (503 / 50003 unless a GatewayError): one
 * timer per batch, none per publish; a WAIT then has its own deadline.
 */
export class PublishBatcher {
  private shards = new Map<string, Shard>()
  private readonly script: ScriptRunner

  constructor(
    send: Sender,
    private readonly o: {
      idempotencyWindowMs: number
      /** A publish not answered within it of being made fails (503, outcome unknown); its call's shard is freed. */
      redisTimeoutMs: number
      cluster: boolean
      /** The shard (master) owning a key; one shard when absent. */
      shardOf?: (key: string, slot?: number) => string
      /** Runs after each batch's write, given its first stream (WAIT for replicas); a rejection fails the batch's writes. */
      afterWrite?: (stream: string) => Promise<void>
      /**
       * This node's id among the nodes subscribed to channels (keys.ts `nodes`): a channel whose
       * subscribed nodes are this one or none is not notified (`BatchAnswer.quiet`). Absent: every
       * channel is.
       */
      nodeId?: string
    },
  ) {
    this.script = new ScriptRunner(send, o.cluster ? CLUSTER_BATCH_PUBLISH_SCRIPT : BATCH_PUBLISH_SCRIPT)
  }

  /** Resolves with the publish's answer, after its batch's write (and WAIT, if set) answered. */
  publish(p: BatchedPublish): Promise<BatchAnswer> {
    const promise = new Promise<BatchAnswer>(capture)
    const { resolve, reject } = made
    const key = this.o.shardOf?.(p.stream, p.slot) ?? ''
    let s = this.shards.get(key)
    if (!s) this.shards.set(key, (s = { items: [], inFlight: 0, scheduled: false }))
    s.items.push({ p, at: performance.now(), resolve, reject })
    this.schedule(key, s)
    return promise
  }

  /** Drains the shard after the current turn's synchronous publishes (they go together). */
  private schedule(key: string, s: Shard) {
    if (s.scheduled || s.inFlight >= MAX_IN_FLIGHT || !s.items.length) return
    s.scheduled = true
    queueMicrotask(() => {
      s.scheduled = false
      this.drain(key, s)
    })
  }

  private drain(key: string, s: Shard) {
    while (s.items.length && s.inFlight < MAX_IN_FLIGHT) {
      let bytes = 0
      let n = 0
      while (n < s.items.length && n < MAX_PUBLISHES) {
        let b = 0
        for (const [, body] of s.items[n]!.p.messages) b += body.length
        if (n > 0 && bytes + b > MAX_BYTES) break
        bytes += b
        n++
      }
      const batch = s.items.splice(0, n)
      s.inFlight++
      void this.run(batch).finally(() => {
        s.inFlight--
        if (s.items.length) this.schedule(key, s)
        else if (s.inFlight === 0 && this.shards.get(key) === s) this.shards.delete(key)
      })
    }
  }

  private async run(items: Pending[]) {
    // the oldest member (the first: a batch is taken from the front of its queue) sets the deadline
    const ms = Math.max(0, items[0]!.at + this.o.redisTimeoutMs - performance.now())
    let replies: BatchAnswer[]
    try {
      replies = await settleWithin(this.write(items), ms, timedOut)
    } catch (e) {
      if (e === TIMED_OUT) {
        for (const it of items) it.reject(commandTimedOut())
        return
      }
      // on a cluster a batch whose slots moved did not run: each publish goes again on its own
      if (items.length > 1 && this.o.cluster && MOVED.test(String((e as Error)?.message))) {
        for (const it of items) void this.run([it])
        return
      }
      for (const it of items) it.reject(commandFailed(e))
      return
    }
    // the WAIT covers every write of the batch; a shortfall is the error of each publish that wrote.
    // It has a deadline of its own (REDIS_TIMEOUT_MS, the WAIT's timeout below it), outside the
    // write's: a write answered in time and then unconfirmed is told so (stored, replicas short),
    // not as a store that did not answer
    let waitError: unknown
    if (this.o.afterWrite)
      await this.o.afterWrite(items[0]!.p.stream).catch((e) => {
        waitError = e ?? new Error('WAIT failed')
      })
    items.forEach((it, i) => {
      const a = replies[i]
      const r = a?.reply
      if (!Array.isArray(r)) it.reject(commandFailed(new Error('Unexpected reply from the batch publish script')))
      else if (Number(r[0]) === -2) it.reject(commandFailed(new Error(String(r[1]))))
      else if (Number(r[0]) === -1 || Number(r[0]) === -3 || waitError === undefined) it.resolve(a!)
      else it.reject(commandFailed(waitError))
    })
  }

  /** The batch's script call. */
  private async write(items: Pending[]): Promise<BatchAnswer[]> {
    const t0 = performance.now()
    const replies = await this.call(items)
    commandAnswered(t0)
    return replies
  }

  /** The script's arguments (lua/batch-publish.ts): each channel described once, then each publish. */
  private async call(items: Pending[]): Promise<BatchAnswer[]> {
    const channels = new Map<string, Described>()
    // the buckets that charge plain publishes, by key: terms of their first such charge, the
    // bucket's clock the latest of them (it ends where the charges one at a time would leave it)
    const buckets = new Map<string, Terms>()
    // per publish: 1 its messages have client ids, 0 plain (one message, no client id, no charge)
    // or -j plain charged 1 on the j-th bucket's terms, 2 neither; its channel, as the call describes it
    const kinds: number[] = []
    const described: Described[] = []
    for (const { p } of items) {
      let c = channels.get(p.stream)
      if (!c) channels.set(p.stream, (c = { n: String(channels.size + 1), p, due: false, ids: false }))
      // asked by any of the batch's publishes to it (the node asks once a second per channel)
      c.due ||= p.expireNow
      c.index ??= p.index
      const ids = p.messages.some(([cid]) => cid !== '')
      c.ids ||= ids
      described.push(c)
      kinds.push(ids ? 1 : !single(p) ? 2 : p.charge ? chargedPlain(p.charge, buckets) : 0)
    }
    // per channel its stream and last id key first (KEYS[1..2S]; the first routes the call on a
    // cluster), then the rate buckets and channel indexes, each named once
    const keys: string[] = []
    const args: Array<string | Buffer> = [
      String(this.o.idempotencyWindowMs),
      String(channels.size),
      String(items.length),
      this.o.nodeId ?? '',
    ]
    for (const { p } of channels.values()) {
      keys.push(p.stream, p.lastId)
      args.push(p.notify)
    }
    const named = new Map<string, string>()
    const keyIndex = (k: string) => {
      let i = named.get(k)
      if (i === undefined) named.set(k, (i = String(keys.push(k))))
      return i
    }
    // what only some channels need: a trim and expiry, an index entry, an idempotency key prefix
    const due: string[] = []
    const index: string[] = []
    const idem: string[] = []
    for (const { n, p, due: d, index: ix, ids } of channels.values()) {
      if (d) due.push(n, String(p.ttlMs), String(p.expireMs))
      if (ix) index.push(n, keyIndex(ix.key), String(ix.score), p.channel)
      if (ids) idem.push(n, p.idemPrefix)
    }
    args.push(String(due.length / 3), ...due, String(index.length / 4), ...index, String(idem.length / 2), ...idem)
    // the buckets that charge plain publishes, each named once with its terms
    args.push(String(buckets.size))
    for (const [bucket, t] of buckets) args.push(keyIndex(bucket), String(t.rate), String(t.burst), String(t.now))
    items.forEach(({ p }, i) => {
      const n = described[i]!.n
      const kind = kinds[i]!
      if (kind <= 0) {
        // plain: its channel number, past the channels by the bucket's number times their count when charged
        args.push(kind === 0 ? n : String(Number(n) - kind * channels.size), p.messages[0]![1])
        return
      }
      const ids = kind === 1
      const bucket = p.charge ? keyIndex(p.charge.bucket) : '0'
      args.push(`-${n}`, String(ids ? -p.messages.length : p.messages.length), bucket)
      if (p.charge) args.push(...chargeArgs(p.charge.charge))
      for (const [cid, body] of p.messages) {
        if (ids) args.push(cid)
        args.push(body)
      }
    })
    // a cluster checks that declared keys share one slot: there the first stream alone is declared
    const replies = this.o.cluster
      ? await this.script.run<Array<BatchReply | string>>(keys.slice(0, 1), [...args, ...keys, String(keys.length)])
      : await this.script.run<Array<BatchReply | string>>(keys, args)
    // after the publishes' answers, per channel its entry before the call's appends: each
    // publish's previous entry follows, its channel's last appended id moving on past it
    // (after a `!` when the channel was not notified: no other node subscribes to it)
    const last: Array<string | undefined> = []
    const quiet: boolean[] = []
    for (let c = 0; c < channels.size; c++) {
      const prev = (replies[items.length + c] as string | undefined) || undefined
      const q = prev !== undefined && prev.charCodeAt(0) === BANG
      quiet.push(q)
      last.push(q ? prev!.slice(1) : prev)
    }
    return items.map((_, i) => {
      const r = replies[i]!
      const c = Number(described[i]!.n) - 1
      const prev = last[c]
      // a plain publish appended is answered its id alone
      if (typeof r === 'string') {
        last[c] = r
        return quiet[c] ? { reply: [1, r], prev, plain: true, quiet: true } : { reply: [1, r], prev, plain: true }
      }
      if (Number(r[0]) > 0) last[c] = lastAppended(r, prev)
      return quiet[c] ? { reply: r, prev, quiet: true } : { reply: r, prev }
    })
  }
}

/** The last id a publish appended (its answer `{ fresh, ...ids }`: ids past `prev`; a duplicate's is older). */
function lastAppended(r: BatchReply, prev: string | undefined): string | undefined {
  const n = Number(r[0])
  let last = prev
  for (let i = 1; i < r.length && n > 0; i++) {
    const id = r[i]
    if (typeof id === 'string' && (last === undefined || newerId(id, last))) last = id
  }
  return last
}

/** Whether stream id `a` (`<ms>-<seq>`) is after `b`. */
function newerId(a: string, b: string): boolean {
  const i = a.indexOf('-')
  const j = b.indexOf('-')
  const ma = Number(a.slice(0, i))
  const mb = Number(b.slice(0, j))
  return ma !== mb ? ma > mb : Number(a.slice(i + 1)) > Number(b.slice(j + 1))
}
