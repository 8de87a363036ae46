import { GatewayError, type ErrorBody } from '../../errors'
import { metrics } from '../../lib/metrics'
import type { Namespaces } from '../control/namespaces'
import type { MessageDraft } from '../types'
import type { DeviceRecord, DeviceState, PushRecipient, PushStore } from './ports'
import type { PushTransport } from './transports'
import { isObject } from './validation'

/** The outcome of one notification for one recipient (what `fullWait` publishes answer). */
export interface DeliveryResult {
  deviceId?: string
  transportType: string
  /** The device's state after the attempt (registered devices only). */
  state?: DeviceState
  error?: ErrorBody
}

/** Devices one channel fan-out reaches at most (subscriptions beyond it are not served). */
export const MAX_FANOUT_DEVICES = 10_000
/** Deliveries running at once per node; channel fan-outs beyond it are dropped (counted). */
const MAX_IN_FLIGHT = 10_000
const CONCURRENCY = 64
const PAGE = 1000

const delivered = metrics.counter(
  'gateway_push_deliveries_total',
  'Push notifications handed to a transport, by transport and outcome.',
)
const dropped = metrics.counter(
  'gateway_push_dropped_total',
  'Push notifications of channel messages dropped because too many deliveries were running.',
)

const failure = (e: unknown): ErrorBody =>
  (e instanceof GatewayError ? e : new GatewayError(50000, 'Push delivery failed')).toBody()

/**
 * Sends notifications through the transports and records each registered device's delivery
 * state (ACTIVE / FAILING / FAILED). FAILED devices are skipped until re-registered. Channel
 * messages with `extras.push` fan out to the channel's subscribed devices in the background.
 */
export class PushDelivery {
  private inFlight = 0

  constructor(
    private readonly store: PushStore,
    private readonly transports: Record<string, PushTransport>,
    private readonly namespaces: Namespaces,
    private readonly onError: (e: unknown) => void,
  ) {}

  /** Sends to a raw recipient (no registration, no state). */
  async toRecipient(
    appId: string,
    recipient: PushRecipient,
    payload: Record<string, unknown>,
  ): Promise<DeliveryResult> {
    const result: DeliveryResult = { transportType: recipient.transportType }
    try {
      await this.send(appId, recipient, payload)
    } catch (e) {
      result.error = failure(e)
    }
    return result
  }

  /** Sends to registered devices (at most CONCURRENCY at once) and records their states. */
  async toDevices(appId: string, devices: DeviceRecord[], payload: Record<string, unknown>): Promise<DeliveryResult[]> {
    const out: DeliveryResult[] = []
    for (let i = 0; i < devices.length; i += CONCURRENCY) {
      out.push(...(await Promise.all(devices.slice(i, i + CONCURRENCY).map((d) => this.toDevice(appId, d, payload)))))
    }
    return out
  }

  private async toDevice(appId: string, d: DeviceRecord, payload: Record<string, unknown>): Promise<DeliveryResult> {
    const base = { deviceId: d.id, transportType: d.recipient.transportType }
    if (d.state === 'FAILED') return { ...base, state: d.state, error: d.error }
    let outcome: { ok: true } | { ok: false; error: ErrorBody } = { ok: true }
    try {
      await this.send(appId, d.recipient, payload, d)
    } catch (e) {
      outcome = { ok: false, error: failure(e) }
    }
    const after = await this.store.recordDelivery(appId, d.id, outcome)
    return {
      ...base,
      state: after?.state ?? (outcome.ok ? 'ACTIVE' : 'FAILING'),
      ...(outcome.ok ? {} : { error: outcome.error }),
    }
  }

  private async send(appId: string, recipient: PushRecipient, payload: Record<string, unknown>, device?: DeviceRecord) {
    const transport = this.transports[recipient.transportType]
    if (!transport) {
      delivered.inc({ transport: recipient.transportType, outcome: 'unavailable' })
      throw new GatewayError(
        50003,
        `Push delivery failed: no transport for ${recipient.transportType} is configured on this gateway (set PUSH_WEBHOOK_URL)`,
      )
    }
    try {
      await transport.send({ appId, recipient, payload, device })
      delivered.inc({ transport: recipient.transportType, outcome: 'ok' })
    } catch (e) {
      delivered.inc({ transport: recipient.transportType, outcome: 'failed' })
      throw e
    }
  }

  /**
   * Hook of every acknowledged channel publish: messages with an `extras.push` object are sent
   * to the devices subscribed to the channel (directly or through their clientId), when the
   * channel's namespace is push-enabled. Never throws and never makes the publisher wait.
   */
  published(appId: string, channel: string, drafts: MessageDraft[]): void {
    let payloads: Array<Record<string, unknown>> | undefined
    for (const d of drafts) {
      const push = d.extras?.push
      if (isObject(push)) (payloads ??= []).push(push)
    }
    if (!payloads) return
    if (this.inFlight >= MAX_IN_FLIGHT) {
      dropped.inc(undefined, payloads.length)
      return
    }
    this.inFlight++
    void this.fanOut(appId, channel, payloads)
      .catch(this.onError)
      .finally(() => {
        this.inFlight--
      })
  }

  private async fanOut(appId: string, channel: string, payloads: Array<Record<string, unknown>>) {
    if ((await this.namespaces.of(appId, channel))?.pushEnabled !== true) return
    const devices = await this.subscribedDevices(appId, channel)
    for (const payload of payloads) await this.toDevices(appId, devices, payload)
  }

  /** The devices subscribed to a channel, each once, at most MAX_FANOUT_DEVICES. */
  async subscribedDevices(appId: string, channel: string): Promise<DeviceRecord[]> {
    const byId = new Map<string, DeviceRecord>()
    const deviceIds: string[] = []
    const clientIds: string[] = []
    let after
    for (;;) {
      const page = await this.store.listSubscriptions(appId, { channel, after, limit: PAGE })
      for (const s of page) {
        if (s.deviceId !== undefined) deviceIds.push(s.deviceId)
        else if (s.clientId !== undefined) clientIds.push(s.clientId)
      }
      if (page.length < PAGE || deviceIds.length + clientIds.length >= MAX_FANOUT_DEVICES) break
      after = page[page.length - 1]
    }
    for (const clientId of clientIds) await this.clientDevices(appId, clientId, byId)
    for (const id of deviceIds) {
      if (byId.size >= MAX_FANOUT_DEVICES) break
      if (byId.has(id)) continue
      const d = await this.store.getDevice(appId, id)
      if (d) byId.set(id, d)
    }
    return [...byId.values()].slice(0, MAX_FANOUT_DEVICES)
  }

  /** Adds the devices registered with `clientId` to `into` (up to MAX_FANOUT_DEVICES in all); returns it. */
  async clientDevices(
    appId: string,
    clientId: string,
    into = new Map<string, DeviceRecord>(),
  ): Promise<Map<string, DeviceRecord>> {
    let after: string | undefined
    while (into.size < MAX_FANOUT_DEVICES) {
      const page = await this.store.listDevices(appId, { clientId, after, limit: PAGE })
      for (const d of page) into.set(d.id, d)
      if (page.length < PAGE) break
      after = page[page.length - 1]!.id
    }
    return into
  }
}
