import { GatewayError } from '../../errors'
import { base64url, fromBase64url } from '../../lib/encoding'
import { hmacSha256, safeEqual } from '../../lib/crypto'
import type { ApiKey } from '../types'
import { checkClientIdLength } from './principal'
import { ROOM_CLAIM_PREFIX, roomClaimsOf } from './user-claims'

/**
 * Service tokens are self-contained and signed with the issuing key's secret, so any node can
 * verify one with nothing but the key record: `<appId>.<keyId>.<payload>.<mac>`, payload being
 * base64url JSON. Four dot-separated parts keep them distinct from JWTs (three parts).
 */
export interface TokenClaims {
  issued: number
  expires: number
  /** Canonical capability JSON. */
  capability: string
  clientId?: string
  /** Issued by a key with revocableTokens: revocations of the key apply to it. */
  revocable?: boolean
  /** What a `revocationKey:` revocation target matches. */
  revocationKey?: string
  /** A JWT's `ably.room.<pattern>` claims with string values: pattern -> value. */
  roomClaims?: Record<string, string>
}

interface WirePayload {
  i: number
  x: number
  c: string
  ci?: string
  /** 1 when revocable. */
  r?: 1
  rk?: string
  /** Room claims (user claims), pattern -> value. */
  rc?: Record<string, string>
  n: string
}

export function signToken(key: ApiKey, claims: TokenClaims, nonce: string): string {
  const payload: WirePayload = { i: claims.issued, x: claims.expires, c: claims.capability, n: nonce }
  if (claims.clientId !== undefined) payload.ci = claims.clientId
  if (claims.revocable) payload.r = 1
  if (claims.revocationKey !== undefined) payload.rk = claims.revocationKey
  if (claims.roomClaims) payload.rc = claims.roomClaims
  const head = `${key.appId}.${key.id}.${base64url(JSON.stringify(payload))}`
  return `${head}.${hmacSha256(key.secret, head, 'base64url')}`
}

/** Splits a service token into its key name and parts without verifying it; undefined if not one. */
export function parseTokenKeyName(token: string): string | undefined {
  const parts = token.split('.')
  return parts.length === 4 ? `${parts[0]}.${parts[1]}` : undefined
}

export function verifyToken(token: string, key: ApiKey): TokenClaims {
  const last = token.lastIndexOf('.')
  const head = token.slice(0, last)
  if (!safeEqual(token.slice(last + 1), hmacSha256(key.secret, head, 'base64url')))
    throw new GatewayError(40101, 'Invalid token: signature mismatch')
  let p: WirePayload
  try {
    p = JSON.parse(fromBase64url(head.split('.')[2]!))
  } catch {
    throw new GatewayError(40143, 'Token not recognised')
  }
  const claims: TokenClaims = {
    issued: p.i,
    expires: p.x,
    capability: p.c,
    clientId: p.ci,
    revocable: p.r === 1,
    revocationKey: p.rk,
  }
  // signed with the payload: only what the token request's issuer set
  if (p.rc && typeof p.rc === 'object') claims.roomClaims = roomClaimsOf(prefixed(p.rc))
  return claims
}

const prefixed = (rc: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(rc).map(([k, v]) => [ROOM_CLAIM_PREFIX + k, v]))

interface JwtHeader {
  alg?: string
  typ?: string
  kid?: string
  /** An Ably token wrapped in a JWT of the customer's own (an embedded token). */
  'x-ably-token'?: unknown
}

/**
 * The Ably token an embedded-token JWT wraps (`x-ably-token` in its JOSE header, or as a claim of an
 * unencrypted JWS), else undefined. The outer JWT is signed by the customer's own secret, which the
 * service does not know: the wrapped token, signed by the service, is what authenticates.
 */
export function embeddedToken(jwt: { header: JwtHeader; claims: Record<string, unknown> }): string | undefined {
  const t = jwt.header['x-ably-token'] ?? jwt.claims['x-ably-token']
  return typeof t === 'string' && t ? t : undefined
}

/**
 * A JWT: a JWS (three parts), or a compact JWE (five parts) whose claims are encrypted with the
 * customer's own secret and so unread (`encrypted`; only its readable protected header counts: an
 * embedded token's wrapper may be a JWE).
 */
export function parseJwt(
  token: string,
): { header: JwtHeader; claims: Record<string, unknown>; signed: string; sig: string; encrypted?: true } | undefined {
  const parts = token.split('.')
  if (parts.length !== 3 && parts.length !== 5) return undefined
  try {
    const header = JSON.parse(fromBase64url(parts[0]!)) as JwtHeader
    if (typeof header !== 'object' || !header) return undefined
    if (parts.length === 5) return { header, claims: {}, signed: '', sig: '', encrypted: true }
    const claims = JSON.parse(fromBase64url(parts[1]!)) as Record<string, unknown>
    if (typeof claims !== 'object' || !claims) return undefined
    return { header, claims, signed: `${parts[0]}.${parts[1]}`, sig: parts[2]! }
  } catch {
    return undefined
  }
}

/** Verifies an HS256 JWT signed with the key named by `kid`; returns its claims in our terms. */
export function verifyJwt(
  jwt: NonNullable<ReturnType<typeof parseJwt>>,
  key: ApiKey,
): TokenClaims & { rawCapability?: string } {
  if (jwt.header.alg !== 'HS256') throw new GatewayError(40144, 'Invalid JWT: only HS256 is supported')
  if (!safeEqual(jwt.sig, hmacSha256(key.secret, jwt.signed, 'base64url')))
    throw new GatewayError(40144, 'Invalid JWT: signature mismatch')
  const { iat, exp } = jwt.claims
  // finite: a JSON number out of range (1e400) parses as Infinity, a token that would never expire
  if (typeof iat !== 'number' || !Number.isFinite(iat))
    throw new GatewayError(40144, 'Invalid JWT: iat must be specified as a number of seconds')
  if (typeof exp !== 'number' || !Number.isFinite(exp))
    throw new GatewayError(40144, 'Invalid JWT: exp must be specified as a number of seconds')
  const cap = jwt.claims['x-ably-capability']
  const clientId = jwt.claims['x-ably-clientId']
  if (typeof clientId === 'string') checkClientIdLength(clientId)
  const revocationKey = jwt.claims['x-ably-revocation-key']
  return {
    issued: iat * 1000,
    expires: exp * 1000,
    capability: typeof cap === 'string' ? cap : cap === undefined ? '' : JSON.stringify(cap),
    clientId: typeof clientId === 'string' ? clientId : undefined,
    revocable: key.revocableTokens,
    revocationKey: typeof revocationKey === 'string' ? revocationKey : undefined,
    roomClaims: roomClaimsOf(jwt.claims),
  }
}
