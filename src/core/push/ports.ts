/**
 * The push storage port: device registrations (with their delivery state) and channel
 * subscriptions, per app. Every backend (memory + SQLite, Redis) implements it; the HTTP suites
 * in test/push hold both to the contracts stated here.
 */
import type { ErrorBody } from '../../errors'

export type DevicePlatform = 'ios' | 'android' | 'browser'
export type DeviceFormFactor = 'phone' | 'tablet' | 'desktop' | 'tv' | 'watch' | 'car' | 'embedded' | 'other'
export type DeviceState = 'ACTIVE' | 'FAILING' | 'FAILED'

/** Where a device's notifications go: `transportType` plus the transport's own fields. */
export type PushRecipient = { transportType: string } & Record<string, unknown>

/** A registered device, as stored. */
export interface DeviceRecord {
  appId: string
  id: string
  clientId?: string
  platform: DevicePlatform
  formFactor: DeviceFormFactor
  metadata: Record<string, unknown>
  deviceSecret?: string
  recipient: PushRecipient
  /** The device identity token (X-Ably-DeviceToken) and when it was issued. */
  token: string
  tokenIssued: number
  created: number
  modified: number
  state: DeviceState
  /** Consecutive failed deliveries (0 after a success or a re-registration). */
  failures: number
  /** The last delivery error while FAILING or FAILED. */
  error?: ErrorBody
}

/** A channel subscription of one device or of every device of one clientId. */
export interface SubscriptionRecord {
  channel: string
  deviceId?: string
  clientId?: string
}

export interface DeviceQuery {
  deviceId?: string
  clientId?: string
  state?: DeviceState
  /** Only devices whose id sorts strictly after this one. */
  after?: string
  limit: number
}

export interface SubscriptionQuery {
  channel?: string
  deviceId?: string
  clientId?: string
  /** deviceId and clientId filters are alternatives (OR) instead of both applying (AND). */
  concat?: boolean
  /** Only subscriptions strictly after this position in the listing order. */
  after?: SubscriptionRecord
  limit: number
}

/**
 * Listing order of subscriptions: by this key (byte order of each part): channel, then kind
 * (`c` client subscriptions before `d` device ones), then the id. Both stores page in it.
 */
export const subscriptionKey = (s: SubscriptionRecord): [string, string, string] =>
  s.deviceId !== undefined ? [s.channel, 'd', s.deviceId] : [s.channel, 'c', s.clientId ?? '']

/** The delivery outcome recorded on a device. */
export type DeliveryOutcome = { ok: true } | { ok: false; error: ErrorBody }

/** This many consecutive failed deliveries turn a FAILING device into a FAILED one. */
export const FAILED_AFTER = 5

export interface PushStore {
  getDevice(appId: string, id: string): Promise<DeviceRecord | undefined>
  /** Creates or replaces the registration (delivery state included, as given). */
  putDevice(device: DeviceRecord): Promise<void>
  /** Devices matching every filter given, sorted by id, after `after`, at most `limit`. */
  listDevices(appId: string, q: DeviceQuery): Promise<DeviceRecord[]>
  /**
   * Removes the devices matching every filter given (at least one of deviceId / clientId) and
   * their device subscriptions, atomically per device; returns how many devices were removed.
   */
  deleteDevices(appId: string, q: { deviceId?: string; clientId?: string }): Promise<number>
  /**
   * Records a delivery on an existing device atomically: success makes it ACTIVE (no error,
   * no failures); a failure counts one more and makes it FAILING, or FAILED after FAILED_AFTER
   * in a row. Returns the device after the change, undefined when it no longer exists.
   */
  recordDelivery(appId: string, id: string, outcome: DeliveryOutcome): Promise<DeviceRecord | undefined>
  /** Adds the subscription (no-op when it exists). */
  putSubscription(appId: string, s: SubscriptionRecord): Promise<void>
  /** Subscriptions matching the query, in listing order (see subscriptionKey). */
  listSubscriptions(appId: string, q: SubscriptionQuery): Promise<SubscriptionRecord[]>
  /** Removes the subscriptions matching every filter given; returns how many were removed. */
  deleteSubscriptions(appId: string, q: { channel?: string; deviceId?: string; clientId?: string }): Promise<number>
  /** Channels with at least one subscription, sorted, after `after`, at most `limit`. */
  channels(appId: string, after: string | undefined, limit: number): Promise<string[]>
}
