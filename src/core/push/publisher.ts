import { GatewayError, notFound, type ErrorBody } from '../../errors'
import type { Limits } from '../limits/limits'
import { requireAdmin, requirePublish, type PushActor } from './access'
import type { DeliveryResult, PushDelivery } from './delivery'
import type { PushStore } from './ports'
import { checkPayload, checkRecipient, invalid, isObject, optString, type Obj } from './validation'

/** Items of one batch publish at most. */
export const MAX_PUSH_BATCH = 100

export interface PushBatchResult {
  successCount: number
  failureCount: number
  results: Array<{ recipient: unknown; results?: DeliveryResult[] } | { recipient: unknown; error: ErrorBody }>
}

type Send = () => Promise<DeliveryResult[]>

/**
 * Direct publishing (push-admin): to a registered device (`{deviceId}`), to every device of a
 * client (`{clientId}`) or to a raw recipient (`{transportType, ...}`). Bad input is refused
 * before anything is sent. With `fullWait` the answer waits for the transports and reports each
 * delivery; otherwise delivery continues after the answer.
 */
export class PushPublisher {
  constructor(
    private readonly store: PushStore,
    private readonly delivery: PushDelivery,
    private readonly limits: Limits,
    private readonly onError: (e: unknown) => void,
    /** Largest payload (JSON bytes): MAX_MESSAGE_SIZE, as a payload may be published as a message. */
    private readonly maxPayloadBytes: number,
  ) {}

  async publish(a: PushActor, body: unknown, fullWait: boolean): Promise<DeliveryResult[] | undefined> {
    requireAdmin(a, 'Publishing push notifications')
    if (!isObject(body)) throw invalid('Invalid push publish: the body must be an object')
    const { recipient, ...payload } = body
    const send = await this.prepare(a, recipient, payload, 'push publish')
    await this.limits.take(a.accountId, 'messages')
    return this.run(send, fullWait)
  }

  /** Body: an array (or one) of `{recipient, payload}`; a bad item fails alone, inside the result. */
  async batch(a: PushActor, body: unknown, fullWait: boolean): Promise<PushBatchResult> {
    requireAdmin(a, 'Publishing push notifications')
    const items = Array.isArray(body) ? body : [body]
    if (items.length === 0) throw invalid('Invalid push batch: no items')
    if (items.length > MAX_PUSH_BATCH) throw invalid(`Invalid push batch: more than ${MAX_PUSH_BATCH} items`)
    await this.limits.take(a.accountId, 'messages', items.length)
    const out: PushBatchResult = { successCount: 0, failureCount: 0, results: [] }
    await Promise.all(
      items.map(async (item, i) => {
        const recipient = isObject(item) ? item.recipient : undefined
        try {
          if (!isObject(item))
            throw invalid(`Invalid push batch item ${i}: must be an object with recipient and payload`)
          const send = await this.prepare(a, recipient, item.payload, `push batch item ${i}`)
          const results = await this.run(send, fullWait)
          out.results[i] = results ? { recipient, results } : { recipient }
          out.successCount++
        } catch (e) {
          out.results[i] = {
            recipient: recipient ?? null,
            error: (e instanceof GatewayError ? e : new GatewayError(50000)).toBody(),
          }
          out.failureCount++
        }
      }),
    )
    return out
  }

  private async run(send: Send, fullWait: boolean): Promise<DeliveryResult[] | undefined> {
    if (fullWait) return send()
    void send().catch(this.onError)
    return undefined
  }

  /**
   * Validates recipient and payload and resolves the devices; returns what sends the
   * notification. Every ablyChannel recipient it reaches (raw, or a device's) needs publish on
   * its channel, as a direct publish there would.
   */
  private async prepare(a: PushActor, recipient: unknown, payloadIn: unknown, what: string): Promise<Send> {
    const appId = a.appId
    const mayWrite = (r: { transportType: string; channel?: unknown }) => {
      if (r.transportType === 'ablyChannel') requirePublish(a, r.channel as string, `Invalid ${what}`)
    }
    if (recipient === undefined || recipient === null) throw invalid(`Invalid ${what}: recipient is required`)
    if (!isObject(recipient)) throw invalid(`Invalid ${what}: recipient must be an object`)
    const payload = checkPayload(payloadIn, this.maxPayloadBytes, what)
    const deviceId = optString(recipient, 'deviceId', `${what} recipient`)
    const clientId = optString(recipient, 'clientId', `${what} recipient`)
    const raw = recipient.transportType !== undefined && recipient.transportType !== null
    if ((deviceId !== undefined ? 1 : 0) + (clientId !== undefined ? 1 : 0) + (raw ? 1 : 0) !== 1) {
      throw invalid(`Invalid ${what}: recipient must be one of {deviceId}, {clientId} or {transportType, ...}`)
    }
    if (deviceId !== undefined) {
      const device = await this.store.getDevice(appId, deviceId)
      if (!device) throw notFound(`Device "${deviceId}" is not registered`)
      mayWrite(device.recipient)
      return () => this.delivery.toDevices(appId, [device], payload)
    }
    if (clientId !== undefined) {
      const devices = [...(await this.delivery.clientDevices(appId, clientId)).values()]
      for (const d of devices) mayWrite(d.recipient)
      return () => this.delivery.toDevices(appId, devices, payload)
    }
    const target = checkRecipient(recipient as Obj, `${what} recipient`)
    mayWrite(target)
    return async () => [await this.delivery.toRecipient(appId, target, payload)]
  }
}
