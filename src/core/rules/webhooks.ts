import { metrics } from '../../lib/metrics'
import type { Clock } from '../ports'
import type { Rule } from '../types'

/** Sends one webhook request; resolves with the HTTP status (0: no answer). */
export type WebhookTransport = (url: string, headers: Record<string, string>, body: unknown) => Promise<number>

const MAX_PENDING = 10_000
const MAX_BATCH = 100
const MAX_BACKOFF_MS = 10_000

const sent = metrics.counter('gateway_webhook_requests_total', 'Webhook requests by outcome.')
const dropped = metrics.counter('gateway_webhook_dropped_total', 'Messages dropped because a webhook queue was full.')

interface Lane {
  rule: Rule
  channel: string
  pending: Array<Record<string, unknown>>
  busy: boolean
  failures: number
}

/**
 * Delivers channel messages to http rules: one lane per rule and channel, so messages of a channel
 * arrive in order; a lane sends one request at a time (a batch of up to 100 messages in `batch`
 * mode, one in `single` mode) and retries a failed request with exponential backoff until it
 * succeeds. Publishing only appends to a lane and never waits. A lane holds at most 10,000
 * messages; beyond that the oldest are dropped (counted in gateway_webhook_dropped_total).
 */
export class WebhookDispatcher {
  private lanes = new Map<string, Lane>()
  private stopped = false

  constructor(private readonly transport: WebhookTransport, private readonly clock: Clock) {}

  enqueue(rule: Rule, channel: string, messages: Array<Record<string, unknown>>): void {
    const k = `${rule.appId}\u0000${rule.id}\u0000${channel}`
    let lane = this.lanes.get(k)
    if (!lane) this.lanes.set(k, (lane = { rule, channel, pending: [], busy: false, failures: 0 }))
    lane.rule = rule
    lane.pending.push(...messages)
    if (lane.pending.length > MAX_PENDING) dropped.inc(undefined, lane.pending.splice(0, lane.pending.length - MAX_PENDING).length)
    if (!lane.busy) void this.drain(k, lane)
  }

  private async drain(k: string, lane: Lane) {
    lane.busy = true
    while (lane.pending.length && !this.stopped) {
      const n = lane.rule.requestMode === 'batch' ? Math.min(MAX_BATCH, lane.pending.length) : 1
      const batch = lane.pending.slice(0, n)
      const headers = Object.fromEntries((lane.rule.target.headers ?? []).map((h) => [h.name, h.value]))
      const status = await this.transport(lane.rule.target.url!, headers, this.body(lane, batch))
      if (status >= 200 && status < 300) {
        sent.inc({ outcome: 'ok' })
        lane.pending.splice(0, n)
        lane.failures = 0
      } else {
        sent.inc({ outcome: 'retry' })
        lane.failures++
        await Bun.sleep(Math.min(MAX_BACKOFF_MS, 100 * 2 ** (lane.failures - 1)))
      }
    }
    lane.busy = false
    if (!lane.pending.length) this.lanes.delete(k)
  }

  private body(lane: Lane, messages: Array<Record<string, unknown>>) {
    return {
      items: [{
        webhookId: lane.rule.id, source: 'channel.message', name: 'channel.message', timestamp: this.clock.now(),
        data: { channelId: lane.channel, site: 'local', messages },
      }],
    }
  }

  /** Messages still waiting (all lanes). */
  backlog(): number {
    let n = 0
    for (const l of this.lanes.values()) n += l.pending.length
    return n
  }

  /** Waits (at most `ms`) for the lanes to empty, then stops retrying; resolves with what is left. */
  async settle(ms: number): Promise<number> {
    const until = Date.now() + ms
    while (this.backlog() > 0 && Date.now() < until) await Bun.sleep(20)
    this.stopped = true
    return this.backlog()
  }
}
