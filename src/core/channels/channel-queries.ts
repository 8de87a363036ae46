import { denied } from '../../errors'
import { authorize } from '../auth/authorize'
import type { Principal } from '../auth/principal'
import type { Namespaces } from '../control/namespaces'
import type { Occupancy } from '../fanout/occupancy'
import type { Broker } from '../ports'
import type { PresenceService } from '../presence/presence-service'
import type { Limits } from '../limits/limits'
import type { HistoryQuery, Message } from '../types'
import { checkChannelName } from '../model/names'
import type { MutableMessages } from './mutable-messages'
import { MAX_BATCH_MESSAGES } from './publisher'

/** What is asked of channels: history, a channel's details, the list of channels, and published ids found. */
export class ChannelQueries {
  constructor(
    private readonly broker: Broker,
    private readonly presence: PresenceService,
    private readonly namespaces: Namespaces,
    private readonly occupancy: Occupancy,
    private readonly limits: Limits,
    /** Latest versions of messages in history. */
    private readonly mutable?: MutableMessages,
  ) {}

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
            objectPublishers: o.objectPublishers,
            objectSubscribers: o.objectSubscribers,
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
}
