/**
 * What the soak's subscribers must have received: every publish acknowledged on a steady channel
 * (its data is `s<seq>`, unique over the run), and per subscriber how often each arrived. A
 * subscriber attached throughout must hold every acknowledged publish of its channels exactly once.
 */
export class SoakLedger {
  private seq = 0
  /** channel -> acknowledged seqs */
  readonly acked = new Map<string, Set<number>>()
  readonly subscribers: SoakReceiver[] = []
  /** Publishes sent, answered with an error (their outcome unknown: never required, never allowed twice). */
  sent = 0
  failed = 0
  readonly errors: string[] = []

  next(): number {
    this.sent++
    return ++this.seq
  }

  ack(channel: string, seq: number) {
    let s = this.acked.get(channel)
    if (!s) this.acked.set(channel, (s = new Set()))
    s.add(seq)
  }

  fail(e: unknown) {
    this.failed++
    this.note(e)
  }

  note(e: unknown) {
    if (this.errors.length < 10) this.errors.push(String((e as Error)?.message ?? e))
  }

  receiver(name: string, channels: string[]): SoakReceiver {
    const r = new SoakReceiver(name, channels)
    this.subscribers.push(r)
    return r
  }

  get ackedCount() {
    let n = 0
    for (const s of this.acked.values()) n += s.size
    return n
  }

  /** Per subscriber: acknowledged publishes of its channels it lacks, and those it got more than once. */
  compare(): Array<{ name: string; want: number; missing: number; duplicates: number; foreign: number }> {
    return this.subscribers.map((r) => {
      let want = 0
      let missing = 0
      for (const ch of r.channels)
        for (const seq of this.acked.get(ch) ?? []) {
          want++
          if (!r.got.get(ch)?.has(seq)) missing++
        }
      return { name: r.name, want, missing, duplicates: r.duplicates, foreign: r.foreign }
    })
  }

  /** Whether every subscriber has every acknowledged publish of its channels. */
  complete(): boolean {
    return this.compare().every((c) => c.missing === 0)
  }
}

export class SoakReceiver {
  /** channel -> seqs received */
  readonly got = new Map<string, Set<number>>()
  duplicates = 0
  /** Messages of ours on a channel it did not subscribe to, or with data not of ours. */
  foreign = 0
  /** Errors the subscriber saw (error events, failed states). */
  readonly errors: string[] = []

  constructor(
    readonly name: string,
    readonly channels: string[],
  ) {}

  receive(channel: string, data: unknown) {
    const seq = typeof data === 'string' && data.startsWith('s') ? Number(data.slice(1)) : NaN
    if (!this.channels.includes(channel) || !Number.isInteger(seq)) {
      this.foreign++
      return
    }
    let s = this.got.get(channel)
    if (!s) this.got.set(channel, (s = new Set()))
    if (s.has(seq)) this.duplicates++
    else s.add(seq)
  }

  error(e: string) {
    if (this.errors.length < 10) this.errors.push(e)
  }
}
