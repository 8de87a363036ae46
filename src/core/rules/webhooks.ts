import { TargetRefused, type HttpPost } from '../../lib/http-post'
import { metrics } from '../../lib/metrics'
import { sleep } from '../../lib/sleep'
import type { Clock } from '../ports'
import type { StatsService } from '../stats/stats-service'
import type { Rule } from '../types'

/**
 * Sends one webhook request; resolves with the HTTP status (0: no answer). Rejects with
 * TargetRefused when the target's address is not allowed (nothing was sent).
 */
export type WebhookTransport = HttpPost

export interface WebhookSettings {
  /** Attempts of one request before its messages are dropped. */
  webhookMaxAttempts: number
  /** How long after its first attempt a request may still be retried (ms). */
  webhookRetryMs: number
  /** Bytes (as JSON) of messages one rule may hold waiting over all its channels. */
  webhookBufferBytes: number
}

const MAX_BATCH = 100
const MAX_BACKOFF_MS = 30_000
/** Deleted rules remembered, so a publish routed with a stale rule list cannot revive their lanes. */
const MAX_TOMBSTONES = 10_000

const sent = metrics.counter('gateway_webhook_requests_total', 'Webhook requests by outcome.')
const dropped = metrics.counter(
  'gateway_webhook_dropped_total',
  'Webhook messages given up, by reason: full (rule buffer), attempts, expired, rejected (3xx/4xx), refused (target address), rule (deleted or disabled).',
)

type DropReason = 'full' | 'attempts' | 'expired' | 'rejected' | 'refused' | 'rule'
const REASONS = Object.fromEntries(
  (['full', 'attempts', 'expired', 'rejected', 'refused', 'rule'] as const).map((r) => [r, { reason: r }]),
) as Record<DropReason, { reason: DropReason }>

interface Item {
  message: Record<string, unknown>
  bytes: number
}

/** What one rule holds: its lanes (one per channel) and the bytes waiting in them. */
interface RuleState {
  rule: Rule
  accountId: string
  bytes: number
  lanes: Map<string, Lane>
}

interface Lane {
  state: RuleState
  channel: string
  pending: Item[]
  busy: boolean
  /** Set when the rule's lanes were dropped: an attempt in flight is then ignored. */
  closed: boolean
  attempts: number
  firstAttempt?: number
}

/** A status worth retrying: no answer, a timeout, rate limiting or a server error. */
const retryable = (status: number) => status === 0 || status === 408 || status === 429 || status >= 500

/**
 * Delivers channel messages to http rules: one lane per rule and channel, so messages of a channel
 * arrive in order; a lane sends one request at a time (a batch of up to 100 messages in `batch`
 * mode, one in `single` mode). Publishing only appends to a lane and never waits.
 *
 * Everything is bounded: a request is retried with exponential backoff only while it answers
 * nothing, 408, 429 or 5xx, at most `webhookMaxAttempts` times and `webhookRetryMs` after its first
 * attempt; other answers (3xx: redirects are not followed, 4xx) and refused targets give up at
 * once. A rule holds at most `webhookBufferBytes` of waiting messages; beyond, new ones are
 * dropped. A deleted or disabled rule's lanes are dropped at once. Every message given up is
 * counted (gateway_webhook_dropped_total by reason, and `messages.outbound.webhook.*.failed` in
 * the app's stats).
 */
export class WebhookDispatcher {
  private rules = new Map<string, RuleState>()
  private tombstones = new Set<string>()
  private stopped = false

  constructor(
    private readonly transport: WebhookTransport,
    private readonly clock: Clock,
    private readonly s: WebhookSettings,
    private readonly stats?: StatsService,
    /** Waits between attempts (tests pass one that does not sleep). */
    private readonly wait: (ms: number) => Promise<void> = sleep,
  ) {}

  enqueue(rule: Rule, accountId: string, channel: string, messages: Array<Record<string, unknown>>): void {
    const rk = `${rule.appId}\u0000${rule.id}`
    if (this.tombstones.has(rk)) return
    let state = this.rules.get(rk)
    if (!state) this.rules.set(rk, (state = { rule, accountId, bytes: 0, lanes: new Map() }))
    let lane = state.lanes.get(channel)
    if (!lane)
      state.lanes.set(channel, (lane = { state, channel, pending: [], busy: false, closed: false, attempts: 0 }))
    let refused = 0
    for (const message of messages) {
      const bytes = JSON.stringify(message).length
      if (state.bytes + bytes > this.s.webhookBufferBytes) refused++
      else {
        lane.pending.push({ message, bytes })
        state.bytes += bytes
      }
    }
    if (refused) this.drop(state, 'full', refused)
    if (!lane.busy) {
      if (lane.pending.length) void this.drain(lane)
      else this.release(lane)
    }
  }

  /**
   * The app's rules as they are now: lanes of rules that are gone or disabled are dropped at once
   * (counted), and lanes of changed rules send to the new target from their next request.
   */
  retain(appId: string, current: Rule[]): void {
    const byId = new Map(current.map((r) => [r.id, r]))
    for (const [rk, state] of this.rules) {
      if (state.rule.appId !== appId) continue
      const now = byId.get(state.rule.id)
      if (now && now.status === 'enabled' && now.ruleType === 'http') {
        state.rule = now
        continue
      }
      if (!now) this.bury(rk)
      this.rules.delete(rk)
      let n = 0
      for (const lane of state.lanes.values()) {
        lane.closed = true
        n += lane.pending.length
        lane.pending = []
      }
      state.bytes = 0
      if (n) this.drop(state, 'rule', n)
    }
  }

  /** Apps that have lanes now. */
  apps(): string[] {
    return [...new Set([...this.rules.values()].map((s) => s.rule.appId))]
  }

  private bury(rk: string) {
    this.tombstones.add(rk)
    if (this.tombstones.size > MAX_TOMBSTONES) this.tombstones.delete(this.tombstones.values().next().value!)
  }

  private async drain(lane: Lane) {
    lane.busy = true
    while (lane.pending.length && !this.stopped && !lane.closed) {
      const rule = lane.state.rule
      const n = rule.requestMode === 'batch' ? Math.min(MAX_BATCH, lane.pending.length) : 1
      const batch = lane.pending.slice(0, n)
      if (lane.firstAttempt === undefined) lane.firstAttempt = this.clock.now()
      else if (this.clock.now() - lane.firstAttempt >= this.s.webhookRetryMs) {
        // no retry starts later than webhookRetryMs after the first attempt
        sent.inc({ outcome: 'failed' })
        this.done(lane, n)
        this.drop(lane.state, 'expired', n)
        continue
      }
      const headers = Object.fromEntries((rule.target.headers ?? []).map((h) => [h.name, h.value]))
      let status: number | 'refused'
      try {
        status = await this.transport(rule.target.url!, headers, this.body(lane, batch))
      } catch (e) {
        status = e instanceof TargetRefused ? 'refused' : 0
      }
      if (lane.closed) break
      if (typeof status === 'number' && status >= 200 && status < 300) {
        sent.inc({ outcome: 'ok' })
        this.done(lane, n)
        this.stats?.webhookDelivered(rule.appId, lane.state.accountId, n)
        continue
      }
      lane.attempts++
      const reason = this.giveUp(lane, status)
      sent.inc({ outcome: reason ? 'failed' : 'retry' })
      if (reason) {
        this.done(lane, n)
        this.drop(lane.state, reason, n)
      } else await this.wait(Math.min(MAX_BACKOFF_MS, 100 * 2 ** (lane.attempts - 1)))
    }
    lane.busy = false
    if (!lane.pending.length) this.release(lane)
  }

  /** Why a failed request is given up, or undefined to retry it. */
  private giveUp(lane: Lane, status: number | 'refused'): DropReason | undefined {
    if (status === 'refused') return 'refused'
    if (!retryable(status)) return 'rejected'
    if (lane.attempts >= this.s.webhookMaxAttempts) return 'attempts'
    return undefined
  }

  /** The first `n` messages of the lane are done with (delivered or given up). */
  private done(lane: Lane, n: number) {
    for (const item of lane.pending.splice(0, n)) lane.state.bytes -= item.bytes
    lane.attempts = 0
    lane.firstAttempt = undefined
  }

  private release(lane: Lane) {
    const state = lane.state
    if (state.lanes.get(lane.channel) === lane) state.lanes.delete(lane.channel)
    if (!state.lanes.size) {
      const rk = `${state.rule.appId}\u0000${state.rule.id}`
      if (this.rules.get(rk) === state) this.rules.delete(rk)
    }
  }

  private drop(state: RuleState, reason: DropReason, n: number) {
    dropped.inc(REASONS[reason], n)
    this.stats?.webhookDropped(state.rule.appId, state.accountId, n)
  }

  private body(lane: Lane, batch: Item[]) {
    return {
      items: [
        {
          webhookId: lane.state.rule.id,
          source: 'channel.message',
          name: 'channel.message',
          timestamp: this.clock.now(),
          data: { channelId: lane.channel, site: 'local', messages: batch.map((i) => i.message) },
        },
      ],
    }
  }

  /** Messages still waiting (all lanes). */
  backlog(): number {
    let n = 0
    for (const s of this.rules.values()) for (const l of s.lanes.values()) n += l.pending.length
    return n
  }

  /** Bytes waiting for one rule (all its channels). */
  queuedBytes(appId: string, ruleId: string): number {
    return this.rules.get(`${appId}\u0000${ruleId}`)?.bytes ?? 0
  }

  /** Waits (at most `ms`) for the lanes to empty, then stops retrying; resolves with what is left. */
  async settle(ms: number): Promise<number> {
    const until = this.clock.now() + ms
    while (this.backlog() > 0 && this.clock.now() < until) await this.wait(20)
    this.stopped = true
    return this.backlog()
  }
}
