import { GatewayError } from '../../errors'
import { metrics } from '../../lib/metrics'
import { authorize } from '../auth/authorize'
import type { Principal } from '../auth/principal'
import { stampUserClaim } from '../auth/user-claims'
import type { Namespaces } from '../control/namespaces'
import type { Broker, PublishResult, SyncAppend } from '../ports'
import type { LimitCharge, Limits } from '../limits/limits'
import type { RulesEngine } from '../rules/rules-engine'
import type { StatsService } from '../stats/stats-service'
import type { MessageDraft } from '../types'
import { ID_ON_CONNECTION, IdGenerator, idOnConnection, idOnConnectionFits, type IdOnConnection } from '../model/ids'
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

export const MAX_BATCH_MESSAGES = 1000

/** A result, or its promise when it has to wait for something (I/O, a lookup not cached). */
export type Answer<T> = T | Promise<T>

/** A publish validated and turned into drafts, ready for the broker. */
export interface Prepared {
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

/** Publishing messages on a channel (REST, realtime and batch publishes all come through here). */
export class Publisher {
  private readonly ids = new IdGenerator()

  constructor(
    private readonly broker: Broker,
    /** The backend's synchronous append, where it has one (CorePorts `syncAppend`). */
    private readonly sync: SyncAppend | undefined,
    private readonly namespaces: Namespaces,
    private readonly stats: StatsService,
    private readonly limits: Limits,
    private readonly rules: RulesEngine,
    private readonly s: ChannelSettings,
    /** Push fan-out of messages with `extras.push` (core/push). */
    private readonly push?: { published(appId: string, channel: string, drafts: MessageDraft[]): void },
    /** Changes of messages published as messages (realtime `updateMessage`...). */
    private readonly mutable?: MutableMessages,
    /** REST publishes on behalf of a realtime connection (a message's `connectionKey`). */
    private readonly onBehalf?: OnBehalf,
  ) {}

  /**
   * Publishes one message or an array, charged to the account's message budget in the broker's
   * append itself (one step: refused whole or published whole, one Redis round trip). A message
   * with a change action (update, delete, append) and the serial of the message it changes is
   * that change, as the official realtime client sends it.
   *
   * Answered at once when nothing on the way waits (an embedded broker, rate limits off or the
   * account's limits known, the namespace's rules cached): no promise and no turn of the event
   * loop per message, which the realtime transport's publishes take. Otherwise its promise. A
   * refusal is thrown (or the promise rejects).
   */
  publish(p: Principal, channelName: string, body: unknown, ctx?: PublishContext): Answer<PublishResponse> {
    // a REST message naming a realtime connection by its key is published as that connection's
    if (!ctx && this.onBehalf && carriesConnectionKey(body))
      return this.onBehalf.resolve(p.appId, body).then((ids) => this.publishAs(p, channelName, body, undefined, ids))
    return this.publishAs(p, channelName, body, ctx)
  }

  private publishAs(
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
    return this.append(p, prepared)
  }

  /** Validates and turns a publish body into drafts (no side effects). */
  prepare(p: Principal, channelName: string, body: unknown, ctx?: PublishContext): Prepared {
    const channel = checkChannelName(channelName)
    authorize(p, channel, 'publish')
    // a loop, not a map: no closure per publish; a lone message is not wrapped in an array
    const drafts: MessageDraft[] = []
    if (Array.isArray(body)) {
      if (body.length === 0) throw new GatewayError(40001, 'Invalid publish request: no messages')
      if (body.length > MAX_BATCH_MESSAGES)
        throw new GatewayError(40001, `Invalid publish request: more than ${MAX_BATCH_MESSAGES} messages`)
      for (const m of body) drafts.push(draftFromWire(m, p))
    } else drafts.push(draftFromWire(body, p))
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
      // a realtime publish's ids also as numbers, for the ring (model/ids.ts)
      const onConnection = ctx !== undefined && idOnConnectionFits(ctx.msgSerial, drafts.length)
      for (let i = 0; i < drafts.length; i++) {
        drafts[i]!.id = `${messageId}:${i}`
        if (onConnection) (drafts[i] as IdOnConnection)[ID_ON_CONNECTION] = idOnConnection(ctx.msgSerial, i)
      }
    }
    if (ctx) for (const d of drafts) d.connectionId = ctx.connectionId
    return { channel, drafts, size, messageId, clientIds, realtime: ctx !== undefined, ephemeral }
  }

  /**
   * Appends a prepared publish and accounts for it: the channel's publish budget taken first
   * (CHANNEL_MAX_PUBLISH_RATE), then the account's message charge, taken in the broker's append
   * when rate limits are on, unless the caller took the account's budget itself (`accountTaken`: a
   * batch publish, charged whole).
   */
  append(p: Principal, x: Prepared, accountTaken = false): Answer<PublishResponse> {
    if (this.limits.channelRated)
      return this.limits
        .takeChannel(p.appId, x.channel, x.drafts.length)
        .then(() => this.chargeAndAppend(p, x, accountTaken))
    return this.chargeAndAppend(p, x, accountTaken)
  }

  private chargeAndAppend(p: Principal, x: Prepared, accountTaken: boolean): Answer<PublishResponse> {
    if (accountTaken || !this.limits.enabled) return this.appendCharged(p, x)
    const charge = this.limits.charge(p.accountId, 'messages', x.drafts.length)
    return charge instanceof Promise
      ? charge.then((c) => this.appendCharged(p, x, c))
      : this.appendCharged(p, x, charge)
  }

  /** Appends with the account's charge, when one goes with it, by the channel's persistence. */
  private appendCharged(p: Principal, x: Prepared, charge?: LimitCharge): Answer<PublishResponse> {
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
    // the backend's synchronous append where it has one (the embedded one: no promise and no turn
    // of the event loop per publish, and no closure), else the broker's promise
    const res = this.sync
      ? this.sync.publishNow(p.appId, x.channel, x.drafts, opts)
      : this.broker.publish(p.appId, x.channel, x.drafts, opts)
    return res instanceof Promise
      ? res.then((r) => this.appended(p, x, persisted, charge, r))
      : this.appended(p, x, persisted, charge, res)
  }

  /** Accounts for an append the broker made (or refused) and answers the publish. */
  private appended(
    p: Principal,
    x: Prepared,
    persisted: boolean,
    charge: LimitCharge | undefined,
    res: PublishResult,
  ): PublishResponse {
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
        res.at,
      )
    }
    return { channel: x.channel, messageId: x.messageId, serials: res.serials }
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
}
