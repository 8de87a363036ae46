import type { EntryKind, HistoryQuery, Message } from '../../core/types'
import { formatSerial } from '../../core/model/serial'
import { BLOCK, giveBlock, takeBlock } from './ring-blocks'

/** How a ring stores a message's body (everything but serial and timestamp) as bytes, and reads it back. */
export interface RingCodec {
  /** At most how many bytes `write` needs for `m`; called right before it. */
  maxSize(m: Message): number
  /** Writes the body of `m` at `offset` of `target` (maxSize(m) bytes are free there), at least one byte; returns the offset after it. */
  write(m: Message, target: Buffer, offset: number): number
  /** The message of `bytes`, sharing no memory with them (the ring reuses its buffer). */
  decode(bytes: Uint8Array, serial: string, timestamp: number): Message
}

const MIN_SLOTS = 16

/**
 * What a ring keeps: at least the newest `minCount` messages, and beyond that every message
 * younger than `windowMs` (before the newest one), never more than `maxBytes` of encoded messages
 * (a hard cap: the oldest go first, the newest one always stays). A resume window of seconds so
 * holds at any publish rate, up to the byte cap.
 */
export interface RetentionPolicy {
  minCount: number
  windowMs: number
  maxBytes: number
}

/** Entry kinds as stored (0: a channel message). */
const KIND_CODES: Record<EntryKind, number> = { presence: 1, mutation: 2, object: 3, annotation: 4, summary: 5 }
const KINDS: Array<EntryKind | undefined> = [undefined, 'presence', 'mutation', 'object', 'annotation', 'summary']

/**
 * A slot's 32-byte record in the ring's index: `RECORD_F64` float64s or `RECORD_U32` uint32s,
 * its fields at these places within it (as float64s: the serial's ms, the timestamp; as uint32s:
 * the serial's seq, the entry's offset in its block, its length, its kind and block: the kind's
 * code in the low KIND_BITS, the block's number above them).
 */
const RECORD_F64 = 4
const RECORD_U32 = 8
const MS = 0
const TS = 1
const SEQ = 4
const OFF = 5
const LEN = 6
const KIND = 7
const KIND_BITS = 3
const KIND_MASK = (1 << KIND_BITS) - 1
/** Block numbers count modulo 2^29 (what the record has room for): a ring never holds that many blocks. */
const BLOCK_MASK = 2 ** (32 - KIND_BITS) - 1
/** An entry in a block of its own with this much room unused is copied into one of its size. */
const OVERSIZED_SLACK = 4096

/**
 * An entry larger than a full block, written alone (from offset 0) in a block of what its encoding
 * may need (three bytes per UTF-16 unit of its strings), moved into a block of its size.
 */
function fitted(block: Buffer, written: number): Buffer {
  const exact = Buffer.allocUnsafeSlow(written)
  exact.set(block.subarray(0, written))
  return exact
}

/**
 * Circular buffer of a channel's recent log entries (messages and other kinds), oldest first,
 * serials increasing, bounded by a retention policy. Used for history of short-lived channels,
 * rewind and resume.
 *
 * Messages are kept encoded, in byte blocks with serials and timestamps in typed arrays, and
 * decoded when read: a full ring is a handful of objects however many messages it holds, so the
 * history every channel keeps costs the garbage collector nothing per message (as JS objects,
 * 2,000 messages per channel made collection pauses the tail of delivery latency). Serials must
 * be in the broker's format (`formatSerial`).
 */
export class Ring {
  /**
   * The index of the slots, grown by doubling as needed (a channel holding few messages holds a
   * small one): one 32-byte record per slot, so a push touches one cache line of it at the newest
   * end and one at the oldest (six arrays, one per field, made it ~eleven lines per push, each a
   * miss when many channels are published to in turn). Slot `s`'s fields are at `s * RECORD_F64 +
   * MS | TS` of `f` and `s * RECORD_U32 + SEQ | OFF | LEN | KIND` of `u` (the kind: KIND_CODES, 0
   * a message, so history skips other kinds without decoding; with the entry's block above it).
   */
  private f: Float64Array
  private u: Uint32Array
  /** Slots the index has room for. */
  private slots: number
  /**
   * The encoded entries, oldest first, in blocks (ring-blocks.ts): each entry in one piece, after
   * the newest one in the newest block, or at the start of a new block when that one has no room
   * for it. A byte is written once and never moved; a block whose entries have all been dropped
   * is given back. `blocks[i]` is block number `firstBlock + i` (modulo BLOCK_MASK + 1).
   */
  private blocks: Buffer[] = []
  private firstBlock = 0
  /** Where the newest entry ends in the newest block. */
  private end = 0
  /** Bytes of the entries held (the room left at a block's end is not counted). */
  private live = 0
  private head = 0
  private count = 0
  private floorText: string
  /** Set when a drop raised the floor to a serial kept as numbers; formatted when read. */
  private floorMs = -1
  private floorSeq = 0

  readonly policy: RetentionPolicy

  /** `retention`: a policy, or a plain count (exactly the newest `n` messages). */
  constructor(
    retention: number | RetentionPolicy,
    floor: string,
    private readonly codec: RingCodec,
  ) {
    this.policy = typeof retention === 'number' ? { minCount: retention, windowMs: 0, maxBytes: Infinity } : retention
    this.slots = Math.max(1, Math.min(this.policy.minCount, MIN_SLOTS))
    this.f = new Float64Array(this.slots * RECORD_F64)
    this.u = new Uint32Array(this.f.buffer)
    this.floorText = floor
  }

  /**
   * Every message with a serial above `floor` is in the ring or was never published: the floor
   * rises as messages are dropped (overflow, expiry). Starts at the ring's creation time, since
   * nothing is known of what came before.
   */
  get floor(): string {
    if (this.floorMs >= 0) {
      this.floorText = formatSerial(this.floorMs, this.floorSeq)
      this.floorMs = -1
    }
    return this.floorText
  }

  set floor(serial: string) {
    this.floorText = serial
    this.floorMs = -1
  }

  get size() {
    return this.count
  }

  /** Bytes of the encoded messages held. */
  get byteSize() {
    return this.live
  }

  /** Bytes of the blocks the ring holds (what it held plus the room left in them). */
  get blockBytes() {
    let n = 0
    for (const b of this.blocks) n += b.length
    return n
  }

  /**
   * Appends `m`, whose serial is `<ms>-<seq>`: pass them as numbers when known (the serial is not
   * parsed back, ~0.2 us a message).
   */
  push(m: Message, ms?: number, seq?: number): void {
    if (this.count === this.slots) this.resize(this.count * 2)
    const need = this.codec.maxSize(m)
    let block = this.blocks[this.blocks.length - 1]
    if (!block || this.end + need > block.length) {
      this.blocks.push((block = takeBlock(need, this.live)))
      this.end = 0
    }
    const last = this.blocks.length - 1
    const slot = this.slot(this.count)
    if (ms === undefined || seq === undefined) {
      const dash = m.serial.indexOf('-')
      ms = Number(m.serial.slice(0, dash))
      seq = Number(m.serial.slice(dash + 1))
    }
    const at = this.end
    const written = this.codec.write(m, block, at)
    if (need > BLOCK && block.length - written > OVERSIZED_SLACK) this.blocks[last] = fitted(block, written)
    const { f, u } = this
    f[slot * RECORD_F64 + MS] = ms
    f[slot * RECORD_F64 + TS] = m.timestamp
    u[slot * RECORD_U32 + SEQ] = seq
    u[slot * RECORD_U32 + OFF] = at
    u[slot * RECORD_U32 + LEN] = written - at
    u[slot * RECORD_U32 + KIND] =
      (m.kind ? KIND_CODES[m.kind]! : 0) | (((this.firstBlock + last) & BLOCK_MASK) << KIND_BITS)
    this.end = written
    this.live += written - at
    this.count++
    this.trim(m.timestamp)
  }

  /** Drops the oldest entries the policy no longer keeps, as of the newest timestamp `now`. */
  private trim(now: number) {
    const { minCount, windowMs, maxBytes } = this.policy
    while (this.count > 1) {
      const overCount = this.count > minCount && this.f[this.head * RECORD_F64 + TS]! <= now - windowMs
      if (!overCount && this.byteSize <= maxBytes) break
      this.dropOldest()
    }
  }

  private slot(i: number) {
    return (this.head + i) % this.slots
  }

  /** The index in `blocks` of the block of slot `s`'s entry. */
  private blockOf(s: number): number {
    return ((this.u[s * RECORD_U32 + KIND]! >>> KIND_BITS) - this.firstBlock) & BLOCK_MASK
  }

  /** i-th message, 0 = oldest. */
  at(i: number): Message {
    const s = this.slot(i)
    const start = this.u[s * RECORD_U32 + OFF]!
    const m = this.codec.decode(
      this.blocks[this.blockOf(s)]!.subarray(start, start + this.u[s * RECORD_U32 + LEN]!),
      formatSerial(this.f[s * RECORD_F64 + MS]!, this.u[s * RECORD_U32 + SEQ]!),
      this.f[s * RECORD_F64 + TS]!,
    )
    const kind = KINDS[this.u[s * RECORD_U32 + KIND]! & KIND_MASK]
    if (kind) m.kind = kind
    return m
  }

  /** Serial of the i-th message, without decoding it. */
  serialAt(i: number): string {
    const s = this.slot(i)
    return formatSerial(this.f[s * RECORD_F64 + MS]!, this.u[s * RECORD_U32 + SEQ]!)
  }

  /** Timestamp of the i-th message, without decoding it. */
  timestampAt(i: number): number {
    return this.f[this.slot(i) * RECORD_F64 + TS]!
  }

  oldest(): Message | undefined {
    return this.count ? this.at(0) : undefined
  }

  /** Serial of the newest message, or the floor when empty: whatever comes next is after it. */
  position(): string {
    return this.count ? this.serialAt(this.count - 1) : this.floor
  }

  /** Index of the first message with serial > `serial` (size if none). */
  indexAfter(serial: string): number {
    let lo = 0
    let hi = this.count
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (this.serialAt(mid) <= serial) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  /** Messages with serial > `serial`, oldest first, at most `limit`. */
  after(serial: string, limit = Infinity): Message[] {
    const out: Message[] = []
    for (let i = this.indexAfter(serial); i < this.count && out.length < limit; i++) out.push(this.at(i))
    return out
  }

  /** Drops messages older than `minTimestamp` from the old end. */
  expire(minTimestamp: number): void {
    while (this.count && this.f[this.head * RECORD_F64 + TS]! < minTimestamp) this.dropOldest()
    if (this.count === 0) {
      // an idle channel holds no blocks
      for (const b of this.blocks) giveBlock(b)
      this.blocks = []
      this.firstBlock = 0
      this.end = 0
      this.live = 0
      if (this.slots > MIN_SLOTS) this.resize(MIN_SLOTS)
    } else if (this.slots > MIN_SLOTS && this.count * 4 < this.slots) {
      // a burst that has passed gives its slots back
      this.resize(Math.max(MIN_SLOTS, this.count * 2))
    }
  }

  /** History query over the ring (other kinds than messages only as asked; timestamps inclusive, cursor exclusive). */
  query(q: HistoryQuery, minTimestamp: number): Message[] {
    const out: Message[] = []
    const start = Math.max(q.start ?? 0, minTimestamp)
    const end = q.end ?? Infinity
    const all = q.entries === 'all'
    const versions = q.entries === 'versions'
    if (q.direction === 'forwards') {
      for (let i = q.cursor ? this.indexAfter(q.cursor) : 0; i < this.count && out.length < q.limit; i++) {
        const t = this.timestampAt(i)
        if (t > end) break
        if (t >= start && (all || this.inHistory(i, versions))) out.push(this.at(i))
      }
    } else {
      let i = q.cursor ? this.indexAfter(q.cursor) - 1 : this.count - 1
      // cursor for backwards pages is the last (oldest) serial returned: continue strictly before it
      if (q.cursor && i >= 0 && this.serialAt(i) === q.cursor) i--
      for (; i >= 0 && out.length < q.limit; i--) {
        const t = this.timestampAt(i)
        if (t < start) break
        if (t <= end && (all || this.inHistory(i, versions))) out.push(this.at(i))
      }
    }
    return out
  }

  /** Whether entry #i is a message (or, with `versions`, a later version of one). */
  private inHistory(i: number, versions: boolean): boolean {
    const kind = this.u[this.slot(i) * RECORD_U32 + KIND]! & KIND_MASK
    return kind === 0 || (versions && kind === KIND_CODES.mutation)
  }

  /** Drops what the policy keeps beyond its count (the window's extra): the minimum is kept. */
  shed(): void {
    while (this.count > this.policy.minCount) this.dropOldest()
  }

  private dropOldest() {
    const h = this.head
    this.floorMs = this.f[h * RECORD_F64 + MS]!
    this.floorSeq = this.u[h * RECORD_U32 + SEQ]!
    this.live -= this.u[h * RECORD_U32 + LEN]!
    this.head = (h + 1) % this.slots
    this.count--
    // the blocks before the oldest entry's are free (the newest block stays, for the next entry)
    const drop = this.count ? this.blockOf(this.head) : this.blocks.length - 1
    for (let i = 0; i < drop; i++) giveBlock(this.blocks[i]!)
    if (drop > 0) {
      this.blocks.splice(0, drop)
      this.firstBlock = (this.firstBlock + drop) & BLOCK_MASK
    }
  }

  /** Moves the slots, oldest first, into an index of `slots` entries. */
  private resize(slots: number) {
    // the live slots are [head, head + count) around the end: at most two runs, copied natively
    const first = Math.min(this.count, this.slots - this.head)
    const to = new Float64Array(slots * RECORD_F64)
    to.set(this.f.subarray(this.head * RECORD_F64, (this.head + first) * RECORD_F64))
    if (first < this.count) to.set(this.f.subarray(0, (this.count - first) * RECORD_F64), first * RECORD_F64)
    this.f = to
    this.u = new Uint32Array(to.buffer)
    this.slots = slots
    this.head = 0
  }
}
