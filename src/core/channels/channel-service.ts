import { GatewayError, denied } from '../../errors'
import { metrics } from '../../lib/metrics'
import { authorize } from '../auth/authorize'
import type { Principal } from '../auth/principal'
import { stampUserClaim } from '../auth/user-claims'
import type { Namespaces } from '../control/namespaces'
import type { Occupancy } from '../fanout/occupancy'
import { batchEntryError, summarize } from '../model/batch'
import type { Broker, PublishResult } from '../ports'
import type { PresenceService } from '../presence/presence-service'
import type { LimitCharge, Limits } from '../limits/limits'
import type { RulesEngine } from '../rules/rules-engine'
import type { StatsService } from '../stats/stats-service'
import type { BatchResult, HistoryQuery, Message, MessageDraft } from '../types'
import { IdGenerator } from '../model/ids'
import { checkClientIds, draftFromWire, messageSize } from '../model/message'
import { checkChannelName } from '../model/names'
import { carriesConnectionKey, type OnBehalf } from './on-behalf'
import type { MutableMessages } from './mutable-messages'
import { isChange } from './versions'
import { checkPublish } from '../model/sub-channels'

export interface ChannelSettings {
  maxMessageSize: number
}

/** Who publishes over a connection (realtime): stamped on each message and the default of its id. */
export interface PublishContext {
  connectionId: string
  /** The protocol message's serial on the connection: ids default to `<connectionId>:<msgSerial>:<index>`. */
  msgSerial: number
}

export interface PublishResponse {
  channel: string
  messageId: string
  serials: string[]
}

const published = metrics.counter(
  'gateway_messages_published_total',
  'Messages accepted by publishes (duplicates excluded), by transport (rest, realtime).',
)
const PUBLISHED_REST = published.series(Object.freeze({ transport: 'rest' }))
const PUBLISHED_REALTIME = published.series(Object.freeze({ transport: 'realtime' }))

export const MAX_BATCH_CHANNELS = 100
export const MAX_BATCH_MESSAGES = 1000

/** A result, or its promise when it has to wait for something (I/O, a lookup not cached). */
export type Answer<T> = T | Promise<T>

/** A publish validated and turned into drafts, ready for the broker. */
interface Prepared {
  channel: string
  drafts: MessageDraft[]
  /** Bytes as the size limit counts them. */
  size: number
  messageId: string
  /** The messages carry ids of their publisher's (deduplicated within the idempotency window). */
  clientIds: boolean
  realtime: boolean
  /** Delivered live, never stored (`extras.ephemeral`): no history, rewind, resume or idempotency. */
  ephemeral: boolean
}

/** The channel REST use cases: publish, history, metadata, enumeration and batch publish. */
export class ChannelService {
  private readonly ids = new IdGenerator()

  constructor(
    private readonly broker: Broker,
    private readonly presence: PresenceService,
    private readonly namespaces: Namespaces,
    private readonly occupancy: Occupancy,
    private readonly stats: StatsService,
    private readonly limits: Limits,
    private readonly rules: RulesEngine,
    private readonly s: ChannelSettings,
    /** Push fan-out of messages with `extras.push` (core/push). */
    private readonly push?: { published(appId: string, channel: string, drafts: MessageDraft[]): void },
    /** Changes of messages published as messages (realtime `updateMessage`...) and latest versions in history. */
    private readonly mutable?: MutableMessages,
    /** REST publishes on behalf of a realtime connection (a message's `connectionKey`). */
    private readonly onBehalf?: OnBehalf,
  ) {}

  /**
   * Publishes one message or an array, charged to the account's message budget in the broker's
   * append itself (one step: refused whole or published whole, one Redis round trip). A message
   * with a change action (update, delete, append) and the serial of the message it changes is
   * that change, as the official realtime client sends it.
   */
  publish(p: Principal, channelName: string, body: unknown, ctx?: PublishContext): Promise<PublishResponse> {
    try {
      // a REST message naming a realtime connection by its key is published as that connection's
      if (!ctx && this.onBehalf && carriesConnectionKey(body))
        return this.onBehalf.resolve(p.appId, body).then((ids) => this.publishNow(p, channelName, body, undefined, ids))
      return Promise.resolve(this.publishNow(p, channelName, body, ctx))
    } catch (e) {
      return Promise.reject(e)
    }
  }

  /**
   * `publish`, answered at once when nothing on the way waits (an embedded broker, rate limits
   * off, the namespace's rules cached): no promise and no turn of the event loop per message,
   * which the realtime transport's publishes take. Otherwise its promise. A refusal is thrown
   * (or the promise rejects).
   */
  publishNow(
    p: Principal,
    channelName: string,
    body: unknown,
    ctx?: PublishContext,
    /** The connection each message is published on behalf of (REST, `connectionKey`), by index. */
    onBehalf?: Array<string | undefined>,
  ): Answer<PublishResponse> {
    if (this.mutable && (Array.isArray(body) ? body.some(isChange) : isChange(body)))
      return this.publishChange(p, channelName, body, ctx)
    const prepared = this.prepare(p, channelName, body, ctx)
    if (onBehalf) onBehalf.forEach((id, i) => id !== undefined && (prepared.drafts[i]!.connectionId = id))
    if (!this.limits.enabled) return this.append(p, prepared)
    return this.limits
      .charge(p.accountId, 'messages', prepared.drafts.length)
      .then((charge) => this.append(p, prepared, charge))
  }

  /** Validates and turns a publish body into drafts (no side effects). */
  private prepare(p: Principal, channelName: string, body: unknown, ctx?: PublishContext): Prepared {
    const channel = checkChannelName(channelName)
    authorize(p, channel, 'publish')
    const wire = Array.isArray(body) ? body : [body]
    if (wire.length === 0) throw new GatewayError(40001, 'Invalid publish request: no messages')
    if (wire.length > MAX_BATCH_MESSAGES)
      throw new GatewayError(40001, `Invalid publish request: more than ${MAX_BATCH_MESSAGES} messages`)
    const drafts = wire.map((m) => draftFromWire(m, p))
    for (const d of drafts) stampUserClaim(d, p, channel)
    // `::$` sub-channels: which take channel publishes, and what (model/sub-channels.ts)
    const ephemeral = checkPublish(channel, drafts)
    let size = 0
    for (const d of drafts) size += messageSize(d)
    if (size > this.s.maxMessageSize) {
      throw new GatewayError(
        40009,
        `Maximum message length exceeded (size was ${size} bytes, limit is ${this.s.maxMessageSize} bytes)`,
      )
    }
    let messageId: string
    const clientIds = checkClientIds(drafts)
    if (clientIds) {
      const first = drafts[0]!.id
      const i = first.lastIndexOf(':')
      messageId = i > 0 ? first.slice(0, i) : first
    } else {
      messageId = ctx ? `${ctx.connectionId}:${ctx.msgSerial}` : this.ids.next()
      for (let i = 0; i < drafts.length; i++) drafts[i]!.id = `${messageId}:${i}`
    }
    if (ctx) for (const d of drafts) d.connectionId = ctx.connectionId
    return { channel, drafts, size, messageId, clientIds, realtime: ctx !== undefined, ephemeral }
  }

  private append(p: Principal, x: Prepared, charge?: LimitCharge): Answer<PublishResponse> {
    const persisted = this.namespaces.persistedCached(p.appId, x.channel)
    if (persisted === undefined)
      return this.namespaces.isPersisted(p.appId, x.channel).then((known) => this.appendTo(p, x, known, charge))
    return this.appendTo(p, x, persisted, charge)
  }

  private appendTo(p: Principal, x: Prepared, persisted: boolean, charge?: LimitCharge): Answer<PublishResponse> {
    // ids a client may send again: its own, or a connection's (resent after a resume); an
    // ephemeral publish is never stored, so nothing of it can be looked up or deduplicated
    const opts = x.ephemeral
      ? { persisted: false, ephemeral: true, charge }
      : { persisted, clientIds: x.clientIds, findable: x.clientIds || x.realtime, charge }
    const appended = (res: PublishResult): PublishResponse => {
      if (charge) this.limits.settle(charge, res.charged!)
      if (res.appended > 0) {
        this.rules.published(p.appId, x.channel, x.drafts, res.serials)
        this.push?.published(p.appId, x.channel, x.drafts)
        ;(x.realtime ? PUBLISHED_REALTIME : PUBLISHED_REST).value += res.appended
        this.stats.messagesPublished(
          p.appId,
          p.accountId,
          res.appended,
          x.size,
          persisted && !x.ephemeral,
          x.realtime ? 'realtime' : 'rest',
        )
      }
      return { channel: x.channel, messageId: x.messageId, serials: res.serials }
    }
    return this.broker.publishNow
      ? appended(this.broker.publishNow(p.appId, x.channel, x.drafts, opts))
      : this.broker.publish(p.appId, x.channel, x.drafts, opts).then(appended)
  }

  /** One change (a lone message: a change is made whole or not at all); `serials` holds its version serial. */
  private async publishChange(p: Principal, channelName: string, body: unknown, ctx?: PublishContext) {
    const wire = Array.isArray(body) ? body : [body]
    if (wire.length !== 1)
      throw new GatewayError(40001, 'Invalid publish request: a change (update, delete, append) is published alone')
    const serial = (wire[0] as { serial?: unknown }).serial
    if (typeof serial !== 'string' || !serial)
      throw new GatewayError(40003, 'This message lacks a serial: a change names the serial of the message it changes')
    const versionSerial = await this.mutable!.change(p, channelName, serial, wire[0], ctx?.connectionId)
    const messageId = ctx ? `${ctx.connectionId}:${ctx.msgSerial}` : this.ids.next()
    return { channel: checkChannelName(channelName), messageId, serials: [versionSerial] }
  }

  /**
   * For each protocol message a connection sent (`msgSerial`, with `count` messages: ids
   * `<connectionId>:<msgSerial>:<index>`), the serials its messages have in the channel's log
   * (within the idempotency window) when all of them are there, else undefined: how a node that
   * did not see the first attempt (the connection resumed here from a node that died, or from
   * this node before a crash) tells a resend from a new publish. One lookup for them all (on
   * Redis, one scan of the channel's stream).
   */
  async publishedBefore(
    p: Principal,
    channelName: string,
    connectionId: string,
    resends: Array<{ msgSerial: number; count: number }>,
  ): Promise<Array<string[] | undefined>> {
    const channel = checkChannelName(channelName)
    // a count out of bounds was never published: refused whole
    const idsOf = resends.map(({ msgSerial, count }) =>
      count < 1 || count > MAX_BATCH_MESSAGES
        ? []
        : Array.from({ length: count }, (_, i) => `${connectionId}:${msgSerial}:${i}`),
    )
    const persisted = await this.namespaces.isPersisted(p.appId, channel)
    const found = await this.broker.serialsOf(p.appId, channel, idsOf.flat(), { persisted })
    return idsOf.map((ids) => {
      const serials = ids.map((id) => found.get(id))
      return serials.length && serials.every((s) => s !== undefined) ? (serials as string[]) : undefined
    })
  }

  /** History: messages in their latest versions, in the places of the originals. */
  async history(p: Principal, channelName: string, q: HistoryQuery): Promise<Message[]> {
    const channel = checkChannelName(channelName)
    authorize(p, channel, 'history')
    await this.limits.take(p.accountId, 'history')
    const persisted = await this.namespaces.isPersisted(p.appId, channel)
    const messages = await this.broker.history(p.appId, channel, q, { persisted })
    return this.mutable ? this.mutable.withLatest(p.appId, channel, messages) : messages
  }

  async details(p: Principal, channelName: string) {
    const channel = checkChannelName(channelName)
    authorize(p, channel, 'channel-metadata')
    const [o, present] = await Promise.all([
      this.occupancy.cluster(p.appId, channel),
      this.presence.occupancy(p.appId, channel),
    ])
    return {
      channelId: channel,
      name: channel,
      status: {
        isActive: true,
        occupancy: {
          metrics: {
            connections: o.connections,
            publishers: o.publishers,
            subscribers: o.subscribers,
            presenceConnections: present.presenceConnections,
            presenceMembers: present.presenceMembers,
            presenceSubscribers: o.presenceSubscribers,
            objectPublishers: 0,
            objectSubscribers: 0,
          },
        },
      },
    }
  }

  async list(p: Principal, prefix: string, after: string | undefined, limit: number): Promise<string[]> {
    if (!p.capability.allowsAnywhere('channel-metadata'))
      throw denied('Channel enumeration requires channel-metadata on "*"')
    const names = await this.broker.channels(p.appId, prefix, after, limit + 1)
    return names.filter((n) => p.capability.allows(n, 'channel-metadata')).slice(0, limit + 1)
  }

  /** Batch publish: one BatchResult per spec; failures of one channel never fail the others. */
  async batchPublish(p: Principal, body: unknown): Promise<BatchResult<PublishResponse>[]> {
    const specs = Array.isArray(body) ? body : [body]
    if (specs.length === 0) throw new GatewayError(40001, 'Invalid batch request: no specs')
    const normalized = specs.map((spec) => {
      if (!spec || typeof spec !== 'object' || Array.isArray(spec))
        throw new GatewayError(40001, 'Invalid batch spec: must be an object with channels and messages')
      const { channels, messages } = spec as { channels?: unknown; messages?: unknown }
      const chs = typeof channels === 'string' ? [channels] : channels
      if (!Array.isArray(chs) || chs.length === 0 || !chs.every((c) => typeof c === 'string'))
        throw new GatewayError(40001, 'Invalid batch spec: channels must be a string or a non-empty array of strings')
      if (chs.length > MAX_BATCH_CHANNELS)
        throw new GatewayError(40001, `Invalid batch spec: more than ${MAX_BATCH_CHANNELS} channels`)
      if (messages === undefined || messages === null)
        throw new GatewayError(40001, 'Invalid batch spec: messages missing')
      const msgs = Array.isArray(messages) ? messages : [messages]
      if (msgs.length === 0 || msgs.length > MAX_BATCH_MESSAGES)
        throw new GatewayError(40001, `Invalid batch spec: 1 to ${MAX_BATCH_MESSAGES} messages`)
      return { channels: chs as string[], messages: msgs }
    })
    // the whole batch is charged at once: over the remaining budget it is refused whole
    let total = 0
    for (const spec of normalized) total += spec.channels.length * spec.messages.length
    await this.limits.take(p.accountId, 'messages', total)
    const out: BatchResult<PublishResponse>[] = []
    for (const spec of normalized) {
      const results = await Promise.all(
        spec.channels.map((channel) =>
          Promise.resolve()
            .then(() => this.append(p, this.prepare(p, channel, spec.messages)))
            .catch((e) => ({ channel, error: batchEntryError(e) })),
        ),
      )
      out.push(summarize(results))
    }
    return out
  }
}
