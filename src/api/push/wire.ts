import type { DeviceRecord, SubscriptionRecord } from '../../core/push/ports'
import { GatewayError } from '../../errors'

/**
 * DeviceDetails as the client libraries read them. `deviceIdentityToken` is a TokenDetails-like
 * object whose `token` the device sends as `X-Ably-DeviceToken`.
 */
export function deviceView(d: DeviceRecord): Record<string, unknown> {
  const out: Record<string, unknown> = { id: d.id }
  if (d.clientId !== undefined) out.clientId = d.clientId
  out.platform = d.platform
  out.formFactor = d.formFactor
  out.metadata = d.metadata
  if (d.deviceSecret !== undefined) out.deviceSecret = d.deviceSecret
  out.push = { recipient: d.recipient, state: d.state, ...(d.error ? { error: d.error } : {}) }
  out.deviceIdentityToken = {
    token: d.token,
    issued: d.tokenIssued,
    ...(d.clientId !== undefined ? { clientId: d.clientId } : {}),
  }
  return out
}

/** Page position of a subscription listing, opaque to clients. */
export const subscriptionCursor = (s: SubscriptionRecord): string =>
  Buffer.from(JSON.stringify(s)).toString('base64url')

export function parseSubscriptionCursor(raw: string | undefined): SubscriptionRecord | undefined {
  if (!raw) return undefined
  try {
    const s = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as SubscriptionRecord
    if (typeof s.channel === 'string' && (typeof s.deviceId === 'string' || typeof s.clientId === 'string')) return s
  } catch {
    /* fall through */
  }
  throw new GatewayError(40003, 'Invalid cursor param')
}
