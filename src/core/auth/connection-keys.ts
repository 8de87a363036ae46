import { hmacSha256, randomId, safeEqual } from '../../lib/crypto'

/**
 * Realtime connection identities. A connection key is `<connectionId>!<mac>`: the mac is an HMAC
 * of the id under the secret of the API key the connection authenticated with, so any node can
 * verify a resume (or recover) without shared per-connection state, and a key is useless to
 * anyone without that API key's credentials.
 */
export const newConnectionId = (): string => randomId(12)

const mac = (connectionId: string, secret: string) =>
  hmacSha256(secret, `connection:${connectionId}`, 'base64url').slice(0, 22)

export function connectionKey(connectionId: string, secret: string): string {
  return `${connectionId}!${mac(connectionId, secret)}`
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
  return id !== undefined && safeEqual(key, connectionKey(id, secret)) ? id : undefined
}
