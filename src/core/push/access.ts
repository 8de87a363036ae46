import { denied } from '../../errors'
import { randomId, safeEqual } from '../../lib/crypto'
import { base64url, fromBase64, fromBase64url, utf8Decode } from '../../lib/encoding'
import type { Principal } from '../auth/principal'
import type { DeviceRecord } from './ports'

/**
 * Who is calling the push interface and what they may do. With `push-admin` (granted on any
 * resource) everything in the app; otherwise a client manages only itself: devices registered
 * with its own clientId, or the one device whose identity token it presents
 * (`X-Ably-DeviceToken`), with `push-subscribe` for new registrations and subscriptions.
 */
export interface PushActor {
  appId: string
  accountId: string
  /** The credentials of the request; absent when the device token alone identifies the caller. */
  principal?: Principal
  admin: boolean
  /** The device proven by its identity token. */
  deviceId?: string
}

/** Whether `op` (or `*`) is granted on any resource of the capability. */
export function grantedAnywhere(p: Principal | undefined, op: string): boolean {
  if (!p) return false
  for (const ops of Object.values(p.capability.capability)) if (ops.includes('*') || ops.includes(op)) return true
  return false
}

/** The identified client of the caller (a wildcard or anonymous principal has none). */
export function clientOf(a: PushActor): string | undefined {
  const c = a.principal?.clientId
  return c === undefined || c === '*' ? undefined : c
}

/** The caller may manage this existing device: admin, the device itself, or its client (with push-subscribe). */
export function ownsDevice(a: PushActor, d: DeviceRecord): boolean {
  if (a.admin || a.deviceId === d.id) return true
  const own = clientOf(a)
  return own !== undefined && d.clientId === own && grantedAnywhere(a.principal, 'push-subscribe')
}

export function requireAdmin(a: PushActor, what: string): void {
  if (!a.admin) throw denied(`${what} requires the push-admin capability`)
}

/**
 * Registrations need push-subscribe somewhere (or push-admin). A channel subscription needs
 * push-subscribe or push-admin on that channel: push-admin granted on other channels does not
 * reach it, since the subscription makes the channel's messages flow to the device.
 */
export function requireSubscribe(a: PushActor, what: string, channel?: string): void {
  const p = a.principal
  if (channel === undefined ? a.admin : !!p && p.capability.allows(channel, 'push-admin')) return
  const ok =
    channel === undefined ? grantedAnywhere(p, 'push-subscribe') : !!p && p.capability.allows(channel, 'push-subscribe')
  if (!ok)
    throw denied(
      `${what} requires the push-subscribe capability${channel === undefined ? '' : ` on channel "${channel}"`} (or push-admin)`,
    )
}

/**
 * Writing into a channel through push (an `ablyChannel` recipient) needs what a direct publish
 * needs: `publish` on that channel, push-admin or not.
 */
export function requirePublish(a: PushActor, channel: string, what: string): void {
  if (!a.principal?.capability.allows(channel, 'publish'))
    throw denied(`${what}: an ablyChannel recipient on "${channel}" requires publish on that channel`)
}

/**
 * Device identity tokens: `device:<appId>:<base64url deviceId>:<secret>`. App ids never hold
 * `:`, so no API key, Ably token or JWT looks like one. The token is stored with the device and
 * compared in constant time; resetting it makes the old one worthless at once.
 */
const PREFIX = 'device:'

export function newDeviceToken(appId: string, deviceId: string): string {
  return `${PREFIX}${appId}:${base64url(deviceId)}:${randomId(32)}`
}

export function parseDeviceToken(token: string): { appId: string; deviceId: string } | undefined {
  if (!token.startsWith(PREFIX)) return undefined
  const parts = token.slice(PREFIX.length).split(':')
  if (parts.length !== 3 || !parts[0] || !parts[1] || !parts[2]) return undefined
  return { appId: parts[0], deviceId: fromBase64url(parts[1]) }
}

/** A Bearer value that is a device identity token (raw, or base64 as ably-js sends tokens). */
export function deviceTokenOfBearer(value: string): string | undefined {
  if (value.startsWith(PREFIX)) return value
  if (value.includes('.') || value.includes(':')) return undefined
  try {
    const decoded = utf8Decode(fromBase64(value))
    return decoded.startsWith(PREFIX) ? decoded : undefined
  } catch {
    return undefined
  }
}

export const tokenMatches = (d: DeviceRecord, token: string) => safeEqual(d.token, token)

/**
 * Without push-admin, a list or delete filter must name the caller itself: its own clientId, or a
 * device it owns (a device that is not registered matches nothing); a filter is required.
 */
export async function requireOwnFilter(
  a: PushActor,
  q: { deviceId?: string; clientId?: string },
  what: string,
  getDevice: (appId: string, deviceId: string) => Promise<DeviceRecord | undefined>,
): Promise<void> {
  if (a.admin) return
  if (q.deviceId === undefined && q.clientId === undefined)
    throw denied(`${what} of other clients requires push-admin: filter by your own deviceId or clientId`)
  if (q.clientId !== undefined) {
    if (q.clientId !== clientOf(a)) throw denied(`${what} of clientId "${q.clientId}" requires push-admin`)
    requireSubscribe(a, what)
  }
  if (q.deviceId !== undefined) {
    const d = await getDevice(a.appId, q.deviceId)
    if (d && !ownsDevice(a, d)) throw denied(`${what}: device "${q.deviceId}" belongs to another client`)
  }
}
