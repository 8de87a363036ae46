import { GatewayError, denied, notFound } from '../../errors'
import { checkChannelName, namespaceOf } from '../model/names'
import type { Namespaces } from '../control/namespaces'
import { clientOf, ownsDevice, requireAdmin, requireOwnFilter, requireSubscribe, type PushActor } from './access'
import type { PushStore, SubscriptionQuery, SubscriptionRecord } from './ports'
import { checkClientId, checkId, invalid, isObject, optString } from './validation'

type Target = { channel?: string; deviceId?: string; clientId?: string }

/**
 * Channel subscriptions of devices (by deviceId) and of clients (every device of a clientId).
 * Only channels of a namespace with `pushEnabled` accept them.
 */
export class ChannelSubscriptions {
  constructor(
    private readonly store: PushStore,
    private readonly namespaces: Namespaces,
  ) {}

  async save(a: PushActor, body: unknown): Promise<SubscriptionRecord> {
    if (!isObject(body)) throw invalid('Invalid subscription: the body must be an object')
    const channelName = optString(body, 'channel', 'subscription')
    if (channelName === undefined) throw invalid('Invalid subscription: channel is required')
    const channel = checkChannelName(channelName)
    const rawDevice = optString(body, 'deviceId', 'subscription')
    const deviceId = rawDevice === undefined ? undefined : checkId(rawDevice, 'subscription deviceId')
    const clientId = checkClientId(optString(body, 'clientId', 'subscription'), 'subscription')
    if ((deviceId === undefined) === (clientId === undefined))
      throw invalid('Invalid subscription: give exactly one of deviceId and clientId')
    requireSubscribe(a, 'Subscribing to push notifications', channel)
    if (deviceId !== undefined) {
      const d = await this.store.getDevice(a.appId, deviceId)
      if (!d) throw notFound(`Device "${deviceId}" is not registered`)
      if (!ownsDevice(a, d))
        throw denied(`Device "${deviceId}" belongs to another client; subscribing it requires push-admin`)
    } else if (!a.admin && clientId !== clientOf(a)) {
      throw denied(`Subscribing clientId "${clientId}" requires push-admin or credentials of that client`)
    }
    const ns = await this.namespaces.of(a.appId, channel)
    if (ns?.pushEnabled !== true) {
      const id = namespaceOf(channel)
      throw new GatewayError(
        40000,
        `Channel "${channel}" is not enabled for push notifications: ` +
          (id === undefined
            ? 'only channels of a namespace with pushEnabled accept push subscriptions'
            : `namespace "${id}" needs pushEnabled`),
      )
    }
    const sub: SubscriptionRecord = deviceId !== undefined ? { channel, deviceId } : { channel, clientId }
    await this.store.putSubscription(a.appId, sub)
    return sub
  }

  async list(a: PushActor, q: SubscriptionQuery): Promise<SubscriptionRecord[]> {
    if (q.deviceId !== undefined && q.clientId !== undefined && !q.concat) {
      throw new GatewayError(40003, 'deviceId and clientId params cannot be combined unless concatFilters=true')
    }
    await requireOwnFilter(a, q, 'Listing push subscriptions', (app, id) => this.store.getDevice(app, id))
    return this.store.listSubscriptions(a.appId, q)
  }

  async remove(a: PushActor, q: Target): Promise<number> {
    if (q.deviceId !== undefined && q.clientId !== undefined)
      throw new GatewayError(40003, 'deviceId and clientId params cannot be combined')
    if (q.channel === undefined && q.deviceId === undefined && q.clientId === undefined) {
      throw new GatewayError(40003, 'Removing push subscriptions needs a channel, deviceId or clientId param')
    }
    await requireOwnFilter(a, q, 'Removing push subscriptions', (app, id) => this.store.getDevice(app, id))
    return this.store.deleteSubscriptions(a.appId, q)
  }

  /** Channels with at least one subscription (push-admin only). */
  async channels(a: PushActor, after: string | undefined, limit: number): Promise<string[]> {
    requireAdmin(a, 'Listing push channels')
    return this.store.channels(a.appId, after, limit)
  }
}
