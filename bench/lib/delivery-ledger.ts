/**
 * What a subscriber process of the delivery scenarios knows about its subscribers, whatever the
 * transport (event stream: sse-subscriber.ts; realtime protocol: realtime-subscriber.ts): per
 * subscriber and publisher lane the next sequence number expected (so a loss, duplicate,
 * reordering or foreign message is counted as it arrives), a rolling hash of each subscriber's
 * arrival order, which subscribers the server cut, and publish-to-delivery times. Subscribers
 * may be grouped, each group with its own channels and lanes.
 */
export interface OpenResult {
  established: number
  failed: number
  ms: number
  errorSamples: string[]
}

export interface Snapshot {
  /** Messages received, summed over subscribers. */
  received: number
  /** Messages received by the subscriber that has the fewest, among those still open (0 when none is). */
  minReceived: number
  /** Subscribers open now (subscribed and not ended or closed). */
  open: number
  /** Subscribers ended or closed by the server or the network (never by us). */
  lost: number
  /** Order violations: a seq above the next expected one (gap or reordering), below it (duplicate or late), or not ours. */
  ahead: number
  behind: number
  foreign: number
  protocolErrors: number
  errorSamples: string[]
}

export interface SettleResult extends Snapshot {
  /** Subscribers that received exactly every acknowledged message, in order. */
  complete: number
  /** Acknowledged messages some subscriber never received (summed over subscribers). */
  missing: number
  /** Distinct orders of arrival across subscribers of the same channels (1 when all saw the same sequence). */
  orders: number
  ms: number
  /** Latency mode: publish-to-delivery times in µs, one per delivery. */
  latencies?: number[]
}

export class DeliveryLedger {
  readonly received: Float64Array
  readonly lost: Uint8Array
  protocolErrors = 0
  /** Set when we close the subscribers ourselves: closes are no longer losses. */
  closing = false
  /** Group of each subscriber. */
  readonly groupOf: Int32Array
  private readonly groupLanes: number[][]
  /** Next expected seq per subscriber × publisher (-1: a lane the subscriber does not receive). */
  private readonly expected: Int32Array
  private readonly orderHash: Int32Array
  private latencies = new Float64Array(0)
  private latencyCount = 0
  private ahead = 0
  private behind = 0
  private foreign = 0
  private readonly errorSamples: string[] = []

  /**
   * `count` subscribers receiving lanes 0 .. publishers-1, or with `groups`: subscriber i belongs
   * to group (first + i) % groups.length and must receive exactly that group's lanes.
   */
  constructor(
    readonly count: number,
    readonly publishers: number,
    groups: number[][] | undefined,
    first = 0,
    private readonly isOpen: (sub: number) => boolean,
  ) {
    this.received = new Float64Array(count)
    this.lost = new Uint8Array(count)
    this.expected = new Int32Array(count * publishers)
    this.orderHash = new Int32Array(count)
    this.groupLanes = groups?.length ? groups : [Array.from({ length: publishers }, (_, p) => p)]
    this.groupOf = Int32Array.from({ length: count }, (_, i) => (first + i) % this.groupLanes.length)
    if (groups?.length) {
      this.expected.fill(-1)
      for (let i = 0; i < count; i++)
        for (const p of this.groupLanes[this.groupOf[i]!]!) this.expected[i * publishers + p] = 0
    }
  }

  sample(msg: string): void {
    if (this.errorSamples.length < 8) this.errorSamples.push(msg)
  }

  /** One message of subscriber `sub`; `stamp` (µs, 0: none) and `readAt` give its latency. */
  message(sub: number, publisher: number, seq: number, stamp: number, readAt: number): void {
    this.received[sub]!++
    if (seq < 0 || publisher >= this.publishers) {
      this.foreign++
      return
    }
    const k = sub * this.publishers + publisher
    const next = this.expected[k]!
    if (next < 0) {
      this.foreign++
      return
    } // a lane this subscriber did not subscribe to
    if (seq === next) this.expected[k] = next + 1
    else if (seq > next) {
      this.ahead++
      this.expected[k] = seq + 1
    } else this.behind++
    this.orderHash[sub] = (Math.imul(this.orderHash[sub]!, 31) + publisher * 1_000_003 + seq) | 0
    if (stamp > 0) {
      if (this.latencyCount === this.latencies.length) {
        const grown = new Float64Array(Math.max(1024, this.latencies.length * 2))
        grown.set(this.latencies)
        this.latencies = grown
      }
      this.latencies[this.latencyCount++] = readAt - stamp
    }
  }

  /** The server or the network ended subscriber `sub` (counted once, and never while we close). */
  markLost(sub: number, why: string): void {
    if (this.lost[sub] || this.closing) return
    this.lost[sub] = 1
    this.sample(`subscriber ${sub}: ${why}`)
  }

  snapshot(): Snapshot {
    let received = 0
    let minReceived = Infinity
    let open = 0
    let lost = 0
    for (let i = 0; i < this.count; i++) {
      received += this.received[i]!
      if (this.lost[i]) lost++
      else if (this.isOpen(i)) {
        open++
        if (this.received[i]! < minReceived) minReceived = this.received[i]!
      }
    }
    return {
      received,
      minReceived: minReceived === Infinity ? 0 : minReceived,
      open,
      lost,
      ahead: this.ahead,
      behind: this.behind,
      foreign: this.foreign,
      protocolErrors: this.protocolErrors,
      errorSamples: this.errorSamples.slice(),
    }
  }

  /** Waits until every subscriber has every acknowledged message (`acked` per lane) or the timeout; then checks. */
  async settle(acked: number[], timeoutMs: number): Promise<SettleResult> {
    const P = this.publishers
    const totals = this.groupLanes.map((lanes) => lanes.reduce((n, p) => n + (acked[p] ?? 0), 0))
    const t0 = performance.now()
    const count = () => {
      let complete = 0
      let missing = 0
      let waiting = 0
      for (let i = 0; i < this.count; i++) {
        const g = this.groupOf[i]!
        const total = totals[g]!
        let ok = this.received[i] === total
        for (const p of this.groupLanes[g]!) {
          const have = this.expected[i * P + p]!
          const want = acked[p] ?? 0
          if (have < want) {
            missing += want - have
            ok = false
          } else if (have !== want) ok = false
        }
        if (ok) complete++
        else if (!this.lost[i] && this.received[i]! < total) waiting++
      }
      return { complete, missing, waiting }
    }
    let c = count()
    while (c.waiting > 0 && performance.now() - t0 < timeoutMs) {
      await Bun.sleep(20)
      c = count()
    }
    const hashes = this.groupLanes.map(() => new Set<number>())
    for (let i = 0; i < this.count; i++) hashes[this.groupOf[i]!]!.add(this.orderHash[i]!)
    return {
      ...this.snapshot(),
      complete: c.complete,
      missing: c.missing,
      orders: Math.max(...hashes.map((h) => h.size)),
      ms: performance.now() - t0,
      latencies: Array.from(this.latencies.subarray(0, this.latencyCount)),
    }
  }

  /** Forgets the latency samples so far (the warm-up); returns how many there were. */
  resetLatencies(): number {
    const n = this.latencyCount
    this.latencyCount = 0
    return n
  }
}

/** The agent operations every subscriber process answers from its ledger (`get` returns the current one). */
export function ledgerOperations(get: () => DeliveryLedger) {
  return {
    snapshot: () => get().snapshot(),
    settle: ({ acked, timeoutMs }: { acked: number[]; timeoutMs: number }) => get().settle(acked, timeoutMs),
    resetLatencies: () => get().resetLatencies(),
  }
}
