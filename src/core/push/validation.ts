import { GatewayError } from '../../errors'
import { utf8Length } from '../../lib/encoding'
import { checkChannelName } from '../model/names'
import type { DeviceFormFactor, DevicePlatform, PushRecipient } from './ports'

/**
 * Validation of what push clients send: device details, recipients, subscriptions and payloads.
 * Every problem is a 400 (40001 for bodies; 40000 for a platform) whose message names the field
 * and what is allowed.
 */
export const PLATFORMS: readonly DevicePlatform[] = ['ios', 'android', 'browser']
export const FORM_FACTORS: readonly DeviceFormFactor[] = [
  'phone',
  'tablet',
  'desktop',
  'tv',
  'watch',
  'car',
  'embedded',
  'other',
]

/** Transports a registration or a raw recipient may name, with the fields each requires. */
const TRANSPORTS: Record<string, string[]> = {
  apns: ['deviceToken'],
  fcm: ['registrationToken'],
  gcm: ['registrationToken'], // the legacy name of fcm, still sent by older clients
  web: ['targetUrl'],
  ablyChannel: ['channel'],
}
export const TRANSPORT_TYPES = Object.keys(TRANSPORTS)

export const MAX_ID_LENGTH = 256
/**
 * Bound on a registration's metadata and its recipient, each as JSON bytes: registrations are
 * durable and read on every fan-out. A real recipient (an APNs or FCM token, a web push endpoint
 * with its keys) is well under 1 KiB.
 */
export const MAX_DEVICE_FIELD_BYTES = 4096
const CONTROL = /[\x00-\x1f\x7f]/

export type Obj = Record<string, unknown>
export const isObject = (v: unknown): v is Obj =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array)

export const invalid = (message: string) => new GatewayError(40001, message)

/** A field that may be absent: msgpack clients send null for unset fields, so null is absent too. */
export function optString(o: Obj, field: string, what: string): string | undefined {
  const v = o[field]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') throw invalid(`Invalid ${what}: ${field} must be a string`)
  return v
}

/** 40001 when `v` is longer than `max` bytes as JSON. */
function checkJsonBytes(v: unknown, max: number, what: string): void {
  const n = utf8Length(JSON.stringify(v))
  if (n > max) throw invalid(`Invalid ${what}: ${n} bytes as JSON, at most ${max}`)
}

/** A string field bounded to MAX_ID_LENGTH characters (a device secret). */
export function checkShort(v: string | undefined, what: string): string | undefined {
  if (v !== undefined && v.length > MAX_ID_LENGTH)
    throw invalid(`Invalid ${what}: longer than ${MAX_ID_LENGTH} characters`)
  return v
}

/** A device id or clientId: non-empty, bounded, no control characters. */
export function checkId(v: string, what: string): string {
  if (!v || v.length > MAX_ID_LENGTH || CONTROL.test(v))
    throw invalid(`Invalid ${what}: must be 1 to ${MAX_ID_LENGTH} characters without control characters`)
  return v
}

export function checkClientId(v: string | undefined, what: string): string | undefined {
  if (v === undefined) return undefined
  if (v === '*') throw invalid(`Invalid ${what}: clientId "*" is not a client`)
  return checkId(v, `${what} clientId`)
}

/** A platform outside ios, android, browser is 400 / 40000 (not 40001), as the hosted service answers. */
export function checkPlatform(v: unknown): DevicePlatform {
  if (!PLATFORMS.includes(v as DevicePlatform))
    throw new GatewayError(
      40000,
      `Invalid device: platform must be one of ${PLATFORMS.join(', ')} (got ${JSON.stringify(v ?? null)})`,
    )
  return v as DevicePlatform
}

export function checkFormFactor(v: unknown): DeviceFormFactor {
  if (!FORM_FACTORS.includes(v as DeviceFormFactor))
    throw invalid(
      `Invalid device: formFactor must be one of ${FORM_FACTORS.join(', ')} (got ${JSON.stringify(v ?? null)})`,
    )
  return v as DeviceFormFactor
}

export function checkMetadata(v: unknown): Record<string, unknown> | undefined {
  if (v === undefined || v === null) return undefined
  if (!isObject(v)) throw invalid('Invalid device: metadata must be an object')
  checkJsonBytes(v, MAX_DEVICE_FIELD_BYTES, 'device metadata')
  return v
}

/** A recipient: a known transportType with the fields that transport needs. */
export function checkRecipient(v: unknown, what = 'push recipient'): PushRecipient {
  if (!isObject(v)) throw invalid(`Invalid ${what}: must be an object with a transportType`)
  const type = v.transportType
  if (typeof type !== 'string' || !Object.hasOwn(TRANSPORTS, type)) {
    throw invalid(
      `Invalid ${what}: transportType must be one of ${TRANSPORT_TYPES.join(', ')} (got ${JSON.stringify(type ?? null)})`,
    )
  }
  for (const field of TRANSPORTS[type]!) {
    if (typeof v[field] !== 'string' || !v[field])
      throw invalid(`Invalid ${what}: transport ${type} needs a ${field} string`)
  }
  if (type === 'ablyChannel') {
    const channel = checkChannelName(v.channel)
    if (channel.includes('::$'))
      throw new GatewayError(
        40010,
        `Invalid ${what}: channel "${channel}" is reserved for the chat and LiveObjects interfaces`,
      )
  }
  checkJsonBytes(v, MAX_DEVICE_FIELD_BYTES, what)
  // unset optional fields (null from msgpack clients) are dropped
  return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== null && x !== undefined)) as PushRecipient
}

/**
 * The notification of a publish: everything but the recipient. It must say something:
 * `notification`, `data` or a platform-specific override (`apns`, `fcm`, `web`). It is held while
 * deliveries are in flight and may be published as a message: at most `maxBytes` as JSON (413).
 */
export function checkPayload(v: unknown, maxBytes: number, what = 'push payload'): Obj {
  if (!isObject(v)) throw invalid(`Invalid ${what}: must be an object`)
  const out: Obj = {}
  for (const [k, x] of Object.entries(v)) if (x !== null && x !== undefined) out[k] = x
  if (!['notification', 'data', 'apns', 'fcm', 'web'].some((k) => out[k] !== undefined)) {
    throw invalid(`Invalid ${what}: needs a notification, data or a platform override (apns, fcm, web)`)
  }
  for (const k of ['notification', 'apns', 'fcm', 'web'])
    if (out[k] !== undefined && !isObject(out[k])) throw invalid(`Invalid ${what}: ${k} must be an object`)
  const size = utf8Length(JSON.stringify(out))
  if (size > maxBytes)
    throw new GatewayError(40009, `Invalid ${what}: too large (size was ${size} bytes, limit is ${maxBytes} bytes)`)
  return out
}
