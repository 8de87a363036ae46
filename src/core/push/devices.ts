import { GatewayError, denied, notFound } from '../../errors'
import type { Clock } from '../ports'
import {
  clientOf,
  newDeviceToken,
  ownsDevice,
  requireOwnFilter,
  requirePublish,
  requireSubscribe,
  type PushActor,
} from './access'
import type { DeviceQuery, DeviceRecord, PushRecipient, PushStore } from './ports'
import {
  checkClientId,
  checkFormFactor,
  checkId,
  checkMetadata,
  checkPlatform,
  checkRecipient,
  checkShort,
  invalid,
  isObject,
  optString,
  type Obj,
} from './validation'

/**
 * Device registrations: register / upsert, partial update, read, list, remove and token reset.
 * A (re-)registration or a new recipient makes the device ACTIVE again with no failures.
 */
export class DeviceRegistrations {
  constructor(
    private readonly store: PushStore,
    private readonly clock: Clock,
  ) {}

  /** POST (id in the body) and PUT (id in the path): creates or replaces the registration. */
  async save(a: PushActor, body: unknown, pathId?: string): Promise<DeviceRecord> {
    if (!isObject(body)) throw invalid('Invalid device: the body must be an object')
    const bodyId = optString(body, 'id', 'device')
    if (pathId !== undefined && bodyId !== undefined && bodyId !== pathId)
      throw invalid(`Invalid device: body id "${bodyId}" differs from the path's "${pathId}"`)
    const rawId = pathId ?? bodyId
    if (rawId === undefined) throw invalid('Invalid device: id is required')
    const id = checkId(rawId, 'device id')
    const clientId = checkClientId(optString(body, 'clientId', 'device'), 'device')
    const platform = checkPlatform(body.platform)
    const formFactor = checkFormFactor(body.formFactor)
    const metadata = checkMetadata(body.metadata)
    const deviceSecret = checkShort(optString(body, 'deviceSecret', 'device'), 'device deviceSecret')
    const recipient = checkRecipient(recipientOf(body, true), 'device push.recipient')
    const existing = await this.store.getDevice(a.appId, id)
    this.authorizeWrite(a, existing, clientId, recipient)
    const now = this.clock.now()
    const device: DeviceRecord = {
      appId: a.appId,
      id,
      platform,
      formFactor,
      metadata: metadata ?? existing?.metadata ?? {},
      recipient,
      token: existing?.token ?? newDeviceToken(a.appId, id),
      tokenIssued: existing?.tokenIssued ?? now,
      created: existing?.created ?? now,
      modified: now,
      state: 'ACTIVE',
      failures: 0,
    }
    if (clientId !== undefined) device.clientId = clientId
    const secret = deviceSecret ?? existing?.deviceSecret
    if (secret !== undefined) device.deviceSecret = secret
    await this.store.putDevice(device)
    return device
  }

  /** PATCH: clientId, metadata, push.recipient (and platform / formFactor / deviceSecret) as given. */
  async update(a: PushActor, id: string, body: unknown): Promise<DeviceRecord> {
    if (!isObject(body)) throw invalid('Invalid device update: the body must be an object')
    const existing = await this.get(a, id)
    const next: DeviceRecord = { ...existing, modified: this.clock.now() }
    const clientId = checkClientId(optString(body, 'clientId', 'device update'), 'device update')
    if (clientId !== undefined) next.clientId = clientId
    if (body.platform !== undefined && body.platform !== null) next.platform = checkPlatform(body.platform)
    if (body.formFactor !== undefined && body.formFactor !== null) next.formFactor = checkFormFactor(body.formFactor)
    const metadata = checkMetadata(body.metadata)
    if (metadata) next.metadata = metadata
    const secret = checkShort(optString(body, 'deviceSecret', 'device update'), 'device update deviceSecret')
    if (secret !== undefined) next.deviceSecret = secret
    const recipient = recipientOf(body, false)
    if (recipient !== undefined) {
      next.recipient = checkRecipient(recipient, 'device push.recipient')
      next.state = 'ACTIVE'
      next.failures = 0
      delete next.error
    }
    this.authorizeWrite(a, existing, next.clientId, next.recipient)
    await this.store.putDevice(next)
    return next
  }

  /** The registration, if the caller may see it: 404 when absent, 403 when someone else's. */
  async get(a: PushActor, id: string): Promise<DeviceRecord> {
    const d = await this.store.getDevice(a.appId, checkId(id, 'device id'))
    if (!d) throw notFound(`Device "${id}" is not registered`)
    if (!ownsDevice(a, d)) throw denied(`Device "${id}" belongs to another client; managing it requires push-admin`)
    return d
  }

  async list(a: PushActor, q: DeviceQuery): Promise<DeviceRecord[]> {
    await requireOwnFilter(a, q, 'Listing devices', (app, id) => this.store.getDevice(app, id))
    return this.store.listDevices(a.appId, q)
  }

  async remove(a: PushActor, id: string): Promise<void> {
    const d = await this.store.getDevice(a.appId, checkId(id, 'device id'))
    if (!d) return
    if (!ownsDevice(a, d)) throw denied(`Device "${id}" belongs to another client; removing it requires push-admin`)
    await this.store.deleteDevices(a.appId, { deviceId: id })
  }

  async removeWhere(a: PushActor, q: { deviceId?: string; clientId?: string }): Promise<number> {
    if (q.deviceId === undefined && q.clientId === undefined)
      throw new GatewayError(40003, 'Removing devices needs a deviceId or clientId param')
    await requireOwnFilter(a, q, 'Removing devices', (app, id) => this.store.getDevice(app, id))
    return this.store.deleteDevices(a.appId, q)
  }

  /** Issues a new identity token; the old one stops working at once. */
  async resetToken(a: PushActor, id: string): Promise<DeviceRecord> {
    const d = await this.get(a, id)
    const now = this.clock.now()
    const next = { ...d, token: newDeviceToken(a.appId, d.id), tokenIssued: now, modified: now }
    await this.store.putDevice(next)
    return next
  }

  /**
   * Without push-admin: a new registration needs push-subscribe; an existing one must be the
   * caller's; the clientId may only be the caller's own (or the device's current one). For
   * everyone, push-admin included: an `ablyChannel` recipient may only name a new channel the
   * caller may publish to, since notifications to the device are published there.
   */
  private authorizeWrite(
    a: PushActor,
    existing: DeviceRecord | undefined,
    clientId: string | undefined,
    recipient: PushRecipient,
  ) {
    if (recipient.transportType === 'ablyChannel') {
      const channel = recipient.channel as string
      const same = existing?.recipient.transportType === 'ablyChannel' && existing.recipient.channel === channel
      if (!same) requirePublish(a, channel, 'Registering a device')
    }
    if (a.admin) return
    if (existing) {
      if (!ownsDevice(a, existing))
        throw denied(`Device "${existing.id}" belongs to another client; managing it requires push-admin`)
    } else requireSubscribe(a, 'Registering a device')
    if (clientId !== undefined && clientId !== clientOf(a) && clientId !== existing?.clientId) {
      throw denied(`Registering a device for clientId "${clientId}" requires push-admin or credentials of that client`)
    }
  }
}

/** `push.recipient` of a device body (required on registration). */
function recipientOf(body: Obj, required: boolean): unknown {
  const push = body.push
  if (push === undefined || push === null) {
    if (required) throw invalid('Invalid device: push.recipient is required')
    return undefined
  }
  if (!isObject(push)) throw invalid('Invalid device: push must be an object')
  if ((push.recipient === undefined || push.recipient === null) && required)
    throw invalid('Invalid device: push.recipient is required')
  return push.recipient ?? undefined
}
