import { GatewayError } from '../../errors'
import { sleep } from '../../lib/sleep'
import { IdGenerator } from '../model/ids'
import type { Namespaces } from '../control/namespaces'
import type { Broker, Clock } from '../ports'
import type { DeviceRecord, PushRecipient } from './ports'

/** One notification for one recipient (a registered device, or a raw recipient of a publish). */
export interface Notification {
  appId: string
  recipient: PushRecipient
  payload: Record<string, unknown>
  device?: DeviceRecord
}

/**
 * Hands notifications to a push service. Resolves once the service accepted the notification;
 * rejects with a GatewayError saying why it was not (recorded on the device).
 */
export interface PushTransport {
  send(n: Notification): Promise<void>
}

/** Name of the channel message that carries a notification to an `ablyChannel` recipient. */
export const PUSH_MESSAGE_NAME = '__ably_push__'

/**
 * How long an `ablyChannel` notification takes to reach its channel (ms). The hosted service
 * delivers notifications through its push queue, after the publish that made them is answered,
 * never in the same step: a client that starts attaching the recipient channel as it publishes
 * gets the notification (the official client's push tests rely on it: ably-js
 * `push_channel_subscription_client_id`). Published at once, it could reach the channel before
 * that attach completes and be lost to the client, the faster the publish path the more often.
 */
export const ABLY_CHANNEL_DISPATCH_MS = 100

/**
 * The `ablyChannel` transport (the hosted service's test transport): the notification is
 * published on the recipient's channel as a message named `__ably_push__` whose data is the
 * payload as JSON text, so any channel subscriber (event stream, history) sees it.
 */
export class AblyChannelTransport implements PushTransport {
  private readonly ids = new IdGenerator()

  constructor(
    private readonly broker: Broker,
    private readonly namespaces: Namespaces,
  ) {}

  async send(n: Notification): Promise<void> {
    const channel = n.recipient.channel as string
    await sleep(ABLY_CHANNEL_DISPATCH_MS)
    const persisted = await this.namespaces.isPersisted(n.appId, channel)
    await this.broker.publish(
      n.appId,
      channel,
      [{ id: `${this.ids.next()}:0`, name: PUSH_MESSAGE_NAME, data: JSON.stringify(n.payload) }],
      { persisted },
    )
  }
}

/** Sends one JSON POST; resolves with the HTTP status (0: no answer). */
export type HttpPost = (url: string, headers: Record<string, string>, body: unknown) => Promise<number>

/**
 * The webhook transport: this node cannot reach APNs, FCM or web push services itself, so their
 * notifications are POSTed to a relay (PUSH_WEBHOOK_URL) as
 * `{appId, deviceId?, clientId?, platform?, recipient, payload, timestamp}`. A 2xx answer is
 * a delivery; anything else (or no answer) is a failed one.
 */
export class WebhookTransport implements PushTransport {
  constructor(
    private readonly post: HttpPost,
    private readonly url: string,
    private readonly clock: Clock,
  ) {}

  async send(n: Notification): Promise<void> {
    const body: Record<string, unknown> = {
      appId: n.appId,
      recipient: n.recipient,
      payload: n.payload,
      timestamp: this.clock.now(),
    }
    if (n.device) {
      body.deviceId = n.device.id
      if (n.device.clientId !== undefined) body.clientId = n.device.clientId
      body.platform = n.device.platform
    }
    const status = await this.post(this.url, { 'x-ably-push-transport': n.recipient.transportType }, body)
    if (status >= 200 && status < 300) return
    throw status === 0
      ? new GatewayError(50003, 'Push delivery failed: the push webhook did not answer')
      : new GatewayError(50000, `Push delivery failed: the push webhook answered HTTP ${status}`)
  }
}

/** What a transport type is delivered by: ablyChannel here, the others through the webhook when one is set. */
export function transportsFor(
  broker: Broker,
  namespaces: Namespaces,
  post: HttpPost,
  webhookUrl: string,
  clock: Clock,
): Record<string, PushTransport> {
  const out: Record<string, PushTransport> = { ablyChannel: new AblyChannelTransport(broker, namespaces) }
  if (webhookUrl) {
    const webhook = new WebhookTransport(post, webhookUrl, clock)
    for (const type of ['apns', 'fcm', 'gcm', 'web']) out[type] = webhook
  }
  return out
}
