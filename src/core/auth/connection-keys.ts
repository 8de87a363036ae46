import { hmacSha256, randomId, safeEqual } from '../../lib/crypto'

/**
 * Realtime connection identities. A connection key is `<connectionId>!<stamp>.<mac>`: the stamp
 * is when the key was issued (ms, base 36; every CONNECTED of a connection may bring a new key),
 * the mac an HMAC of both under the secret of the API key the connection authenticated with, so
 * any node can verify a resume (or recover) without shared per-connection state, and a key is
 * useless to anyone without that API key's credentials.
 */
export const newConnectionId = (): string => randomId(12)

const mac = (connectionId: string, stamp: string, secret: string) =>
  hmacSha256(secret, `connection:${connectionId}:${stamp}`, 'base64url').slice(0, 22)

export function connectionKey(connectionId: string, secret: string, issuedAt = Date.now()): string {
  const stamp = issuedAt.toString(36)
  return `${connectionId}!${stamp}.${mac(connectionId, stamp, secret)}`
}

/** The connection id of a key, when it is well formed (not yet verified). */
export function connectionIdOf(key: string): string | undefined {
  const bang = key.indexOf('!')
  const id = key.slice(0, bang)
  return bang > 0 && /^[A-Za-z0-9_-]{1,64}$/.test(id) ? id : undefined
}

/** The connection id of a key made with `secret`, or undefined when it is not one. */
export function verifyConnectionKey(key: string, secret: string): string | undefined {
  const id = connectionIdOf(key)
  if (id === undefined) return undefined
  const rest = key.slice(id.length + 1)
  const dot = rest.indexOf('.')
  const stamp = rest.slice(0, dot)
  if (dot < 1 || !/^[0-9a-z]{1,12}$/.test(stamp)) return undefined
  return safeEqual(rest.slice(dot + 1), mac(id, stamp, secret)) ? id : undefined
}
