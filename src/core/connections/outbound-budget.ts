import type { Clock } from '../ports'

/**
 * A connection's outbound message budget (REALTIME_MAX_OUTBOUND_RATE): `rate` messages a second
 * refilled continuously, a second of it as burst. Unlike a publish budget it is taken in part:
 * of a batch, what the budget holds goes and the rest is dropped (the hosted service's 42915,
 * told to the client as a continuity loss, 80020).
 */
export class OutboundBudget {
  private tokens: number
  private at: number

  constructor(
    readonly rate: number,
    private readonly clock: Clock,
  ) {
    this.tokens = Math.max(rate, 1)
    this.at = clock.now()
  }

  /** How many of `n` messages may go now (those are taken). */
  take(n: number): number {
    const now = this.clock.now()
    if (now > this.at) {
      this.tokens = Math.min(Math.max(this.rate, 1), this.tokens + ((now - this.at) * this.rate) / 1000)
      this.at = now
    }
    const k = Math.min(n, Math.floor(this.tokens))
    this.tokens -= k
    return k
  }
}
