import { GatewayError, denied } from '../../errors'
import { metrics } from '../../lib/metrics'
import type { Principal } from '../auth/principal'
import type { Namespaces } from '../control/namespaces'
import type { Hub } from '../fanout/hub'
import type { Broker, PresenceStore } from '../ports'
import type { LimitCharge, RateLimiter } from '../limits/rate-limiter'
import type { RulesEngine } from '../rules/rules-engine'
import type { StatsService } from '../stats/stats-service'
import type { HistoryQuery, Message, MessageDraft, PresenceMessage } from '../types'
import { IdGenerator } from './ids'
import { checkClientIds, draftFromWire, messageSize } from './message'
import { checkChannelName } from './names'

export interface ChannelSettings {
  maxMessageSize: number
}

export interface PublishResponse { channel: string; messageId: string; serials: string[] }

export interface BatchResult<T> {
  successCount: number
  failureCount: number
  results: Array<T | { channel: string; error: ReturnType<GatewayError['toBody']> }>
}

const published = metrics.counter('gateway_messages_published_total', 'Messages accepted by publishes (duplicates excluded).')

export const MAX_BATCH_CHANNELS = 100
export const MAX_BATCH_MESSAGES = 1000

/** Asserts the principal may do `op` on `channel`; 403 (40160) otherwise. */
export function authorize(p: Principal, channel: string, op: string): void {
  if (!p.capability.allows(channel, op)) throw denied(`Operation "${op}" not permitted on channel "${channel}" with the provided capability`)
}

/** The channel REST use cases: publish, history, presence, metadata, enumeration and batches. */
export class ChannelService {
  private readonly ids = new IdGenerator()

  constructor(
    private readonly broker: Broker,
    private readonly presence: PresenceStore,
    private readonly namespaces: Namespaces,
    private readonly hub: Hub,
    private readonly stats: StatsService,
    private readonly limits: RateLimiter,
    private readonly rules: RulesEngine,
    private readonly s: ChannelSettings,
    /** Push fan-out of messages with `extras.push` (core/push). */
    private readonly push?: { published(appId: string, channel: string, drafts: MessageDraft[]): void },
  ) {}

  /**
   * Publishes one message or an array, charged to the account's message budget in the broker's
   * append itself (one step: refused whole or published whole, one Redis round trip).
   */
  async publish(p: Principal, channelName: string, body: unknown): Promise<PublishResponse> {
    const prepared = this.prepare(p, channelName, body)
    const charge = this.limits.enabled ? await this.limits.charge(p.accountId, 'messages', prepared.drafts.length) : undefined
    return this.append(p, prepared, charge)
  }

  /** Validates and turns a publish body into drafts (no side effects). */
  private prepare(p: Principal, channelName: string, body: unknown) {
    const channel = checkChannelName(channelName)
    authorize(p, channel, 'publish')
    // service sub-channels carry chat and LiveObjects events: only those services publish there
    if (channel.includes('::$')) throw denied(`Channel "${channel}" is reserved for the chat and LiveObjects interfaces`)
    const wire = Array.isArray(body) ? body : [body]
    if (wire.length === 0) throw new GatewayError(40001, 'Invalid publish request: no messages')
    if (wire.length > MAX_BATCH_MESSAGES) throw new GatewayError(40001, `Invalid publish request: more than ${MAX_BATCH_MESSAGES} messages`)
    const drafts = wire.map((m) => draftFromWire(m, p))
    let size = 0
    for (const d of drafts) size += messageSize(d)
    if (size > this.s.maxMessageSize) {
      throw new GatewayError(40009, `Maximum message length exceeded (size was ${size} bytes, limit is ${this.s.maxMessageSize} bytes)`)
    }
    let messageId: string
    const clientIds = checkClientIds(drafts)
    if (clientIds) {
      const first = drafts[0]!.id
      const i = first.lastIndexOf(':')
      messageId = i > 0 ? first.slice(0, i) : first
    } else {
      messageId = this.ids.next()
      for (let i = 0; i < drafts.length; i++) drafts[i]!.id = `${messageId}:${i}`
    }
    return { channel, drafts, size, messageId, clientIds }
  }

  private async append(p: Principal, x: ReturnType<ChannelService['prepare']>, charge?: LimitCharge): Promise<PublishResponse> {
    const persisted = this.namespaces.persistedCached(p.appId, x.channel) ?? (await this.namespaces.isPersisted(p.appId, x.channel))
    const res = await this.broker.publish(p.appId, x.channel, x.drafts, { persisted, clientIds: x.clientIds, charge })
    if (charge) this.limits.settle(charge, res.charged!)
    if (res.appended > 0) {
      this.rules.published(p.appId, x.channel, x.drafts, res.serials)
      this.push?.published(p.appId, x.channel, x.drafts)
      published.inc(undefined, res.appended)
      this.stats.messagesPublished(p.appId, p.accountId, res.appended, x.size, persisted)
    }
    return { channel: x.channel, messageId: x.messageId, serials: res.serials }
  }

  async history(p: Principal, channelName: string, q: HistoryQuery): Promise<Message[]> {
    const channel = checkChannelName(channelName)
    authorize(p, channel, 'history')
    await this.limits.take(p.accountId, 'history')
    const persisted = await this.namespaces.isPersisted(p.appId, channel)
    return this.broker.history(p.appId, channel, q, { persisted })
  }

  async presenceMembers(p: Principal, channelName: string, filter: { clientId?: string; connectionId?: string; limit: number }): Promise<PresenceMessage[]> {
    const channel = checkChannelName(channelName)
    authorize(p, channel, 'subscribe')
    return this.members(p.appId, channel, filter)
  }

  private async members(appId: string, channel: string, filter: { clientId?: string; connectionId?: string; limit: number }) {
    const all = await this.presence.members(appId, channel)
    return all
      .filter((m) => (filter.clientId === undefined || m.clientId === filter.clientId) && (filter.connectionId === undefined || m.connectionId === filter.connectionId))
      .slice(0, filter.limit)
  }

  async presenceHistory(p: Principal, channelName: string, q: HistoryQuery): Promise<PresenceMessage[]> {
    const channel = checkChannelName(channelName)
    authorize(p, channel, 'history')
    await this.limits.take(p.accountId, 'history')
    return this.presence.history(p.appId, channel, q)
  }

  async details(p: Principal, channelName: string) {
    const channel = checkChannelName(channelName)
    authorize(p, channel, 'channel-metadata')
    const subscribers = await this.hub.clusterCount(p.appId, channel)
    const presenceMembers = (await this.presence.members(p.appId, channel)).length
    return {
      channelId: channel,
      name: channel,
      status: {
        isActive: true,
        occupancy: {
          metrics: {
            connections: subscribers, publishers: 0, subscribers, presenceConnections: 0, presenceMembers,
            presenceSubscribers: subscribers, objectPublishers: 0, objectSubscribers: 0,
          },
        },
      },
    }
  }

  async list(p: Principal, prefix: string, after: string | undefined, limit: number): Promise<string[]> {
    if (!p.capability.allowsAnywhere('channel-metadata')) throw denied('Channel enumeration requires channel-metadata on "*"')
    const names = await this.broker.channels(p.appId, prefix, after, limit + 1)
    return names.filter((n) => p.capability.allows(n, 'channel-metadata')).slice(0, limit + 1)
  }

  /** Batch publish: one BatchResult per spec; failures of one channel never fail the others. */
  async batchPublish(p: Principal, body: unknown): Promise<BatchResult<PublishResponse>[]> {
    const specs = Array.isArray(body) ? body : [body]
    if (specs.length === 0) throw new GatewayError(40001, 'Invalid batch request: no specs')
    const normalized = specs.map((spec) => {
      if (!spec || typeof spec !== 'object' || Array.isArray(spec)) throw new GatewayError(40001, 'Invalid batch spec: must be an object with channels and messages')
      const { channels, messages } = spec as { channels?: unknown; messages?: unknown }
      const chs = typeof channels === 'string' ? [channels] : channels
      if (!Array.isArray(chs) || chs.length === 0 || !chs.every((c) => typeof c === 'string')) throw new GatewayError(40001, 'Invalid batch spec: channels must be a string or a non-empty array of strings')
      if (chs.length > MAX_BATCH_CHANNELS) throw new GatewayError(40001, `Invalid batch spec: more than ${MAX_BATCH_CHANNELS} channels`)
      if (messages === undefined || messages === null) throw new GatewayError(40001, 'Invalid batch spec: messages missing')
      const msgs = Array.isArray(messages) ? messages : [messages]
      if (msgs.length === 0 || msgs.length > MAX_BATCH_MESSAGES) throw new GatewayError(40001, `Invalid batch spec: 1 to ${MAX_BATCH_MESSAGES} messages`)
      return { channels: chs as string[], messages: msgs }
    })
    // the whole batch is charged at once: over the remaining budget it is refused whole
    let total = 0
    for (const spec of normalized) total += spec.channels.length * spec.messages.length
    await this.limits.take(p.accountId, 'messages', total)
    const out: BatchResult<PublishResponse>[] = []
    for (const spec of normalized) {
      const results = await Promise.all(spec.channels.map((channel) =>
        Promise.resolve().then(() => this.append(p, this.prepare(p, channel, spec.messages))).catch((e) => ({ channel, error: asGatewayError(e).toBody() }))))
      out.push(summarize(results))
    }
    return out
  }

  async batchPresence(p: Principal, channels: string[]): Promise<BatchResult<{ channel: string; presence: PresenceMessage[] }>> {
    if (channels.length > MAX_BATCH_CHANNELS) throw new GatewayError(40003, `More than ${MAX_BATCH_CHANNELS} channels`)
    type Item = { channel: string; presence: PresenceMessage[] }
    const results = await Promise.all(channels.map((channel) =>
      this.presenceMembers(p, channel, { limit: 1000 }).then(
        (presence): Item => ({ channel, presence }),
        (e) => ({ channel, error: asGatewayError(e).toBody() }),
      )))
    return summarize<Item>(results)
  }
}

const asGatewayError = (e: unknown): GatewayError => (e instanceof GatewayError ? e : new GatewayError(50000))

function summarize<T>(results: Array<T | { channel: string; error: ReturnType<GatewayError['toBody']> }>): BatchResult<T> {
  const failureCount = results.filter((r) => typeof r === 'object' && r !== null && 'error' in r).length
  return { successCount: results.length - failureCount, failureCount, results }
}
