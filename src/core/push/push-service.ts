import { GatewayError } from '../../errors'
import type { Principal } from '../auth/principal'
import type { Namespaces } from '../control/namespaces'
import type { Limits } from '../limits/limits'
import type { Broker, Clock, ControlStore } from '../ports'
import type { MessageDraft } from '../types'
import { grantedAnywhere, parseDeviceToken, tokenMatches, type PushActor } from './access'
import { PushDelivery } from './delivery'
import { DeviceRegistrations } from './devices'
import type { PushStore } from './ports'
import { PushPublisher } from './publisher'
import { ChannelSubscriptions } from './subscriptions'
import { transportsFor, type HttpPost, type PushTransport } from './transports'

export interface PushSettings {
  /** Relay of APNs / FCM / web push notifications (empty: those transports are unavailable). */
  pushWebhookUrl: string
  /** Bound of a notification's payload (JSON bytes). */
  maxMessageSize: number
}

/**
 * Push notifications: device registrations, channel subscriptions, direct publishing and the
 * fan-out of channel messages carrying `extras.push`, delivered through pluggable transports.
 */
export class PushService {
  readonly devices: DeviceRegistrations
  readonly subscriptions: ChannelSubscriptions
  readonly publisher: PushPublisher
  readonly delivery: PushDelivery

  constructor(
    private readonly store: PushStore,
    private readonly control: ControlStore,
    broker: Broker,
    namespaces: Namespaces,
    limits: Limits,
    clock: Clock,
    post: HttpPost,
    s: PushSettings,
    onError: (e: unknown) => void = () => {},
    transports: Record<string, PushTransport> = transportsFor(broker, namespaces, post, s.pushWebhookUrl, clock),
  ) {
    this.delivery = new PushDelivery(store, transports, namespaces, onError)
    this.devices = new DeviceRegistrations(store, clock)
    this.subscriptions = new ChannelSubscriptions(store, namespaces)
    this.publisher = new PushPublisher(store, this.delivery, limits, onError, s.maxMessageSize)
  }

  /**
   * The caller: the request's credentials, the device identity token (`X-Ably-DeviceToken`, or a
   * Bearer token that is one), or both (the same app). A token that matches no registered device
   * is 401 / 40101; a token alone is held to the app's status and TLS rule as credentials are.
   */
  async actor(
    principal: Principal | undefined,
    deviceToken: string | undefined,
    secure: () => boolean = () => true,
  ): Promise<PushActor> {
    let deviceId: string | undefined
    let appId = principal?.appId
    if (deviceToken !== undefined) {
      const parsed = parseDeviceToken(deviceToken)
      const device =
        parsed && (principal === undefined || parsed.appId === principal.appId)
          ? await this.store.getDevice(parsed.appId, parsed.deviceId)
          : undefined
      if (!device || !tokenMatches(device, deviceToken)) throw new GatewayError(40101, 'Invalid device identity token')
      deviceId = device.id
      appId = device.appId
    }
    if (appId === undefined)
      throw new GatewayError(40101, 'Invalid credentials: no key, token or device identity token provided')
    let accountId = principal?.accountId
    if (accountId === undefined) {
      const app = await this.control.getApp(appId)
      if (!app || app.status !== 'enabled') throw new GatewayError(40300, 'Application disabled')
      if (app.tlsOnly && !secure()) throw new GatewayError(40311, 'This app accepts only TLS connections')
      accountId = app.accountId
    }
    return { appId, accountId, principal, deviceId, admin: grantedAnywhere(principal, 'push-admin') }
  }

  /** Hook of every acknowledged channel publish (see PushDelivery.published). */
  published(appId: string, channel: string, drafts: MessageDraft[]): void {
    this.delivery.published(appId, channel, drafts)
  }
}
