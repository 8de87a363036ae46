import { GatewayError } from '../../errors'
import type { CapabilityMatcher } from './capability'

/**
 * Longest clientId a request may name (characters). A clientId is stored with messages, reactions,
 * typing state and push registrations, and only messages count it against a size limit.
 */
export const MAX_CLIENT_ID_LENGTH = 256

/** 40012 for a clientId longer than MAX_CLIENT_ID_LENGTH. */
export function checkClientIdLength(clientId: string): string {
  if (clientId.length > MAX_CLIENT_ID_LENGTH)
    throw new GatewayError(40012, `Invalid clientId: longer than ${MAX_CLIENT_ID_LENGTH} characters`)
  return clientId
}

/** Who is calling, as established from credentials; everything the routes need to authorise. */
export interface Principal {
  kind: 'basic' | 'token' | 'jwt'
  appId: string
  accountId: string
  keyName: string
  /** `undefined`: anonymous; `'*'`: may act as any clientId; otherwise the identified client. */
  clientId?: string
  capability: CapabilityMatcher
  /** Token expiry (ms); undefined for Basic auth. */
  expires?: number
  /** The app accepts only requests that arrived over TLS. */
  tlsOnly?: boolean
  /** The app's own member limit per channel, when it has one (sandbox `limits.presence.maxMembers`). */
  presenceMaxMembers?: number
  /** Set for a token of a key with revocableTokens: what a revocation matches it on. */
  revocable?: RevocableClaims
  /** A JWT's `ably.room.<pattern>` claims: pattern -> value (see auth/user-claims.ts). */
  roomClaims?: Record<string, string>
}

/** What a token revocation can match on, carried by every revocable token. */
export interface RevocableClaims {
  /** When the token was issued (ms). */
  issued: number
  /** The clientId the token was issued for (not one an `X-Ably-ClientId` header chose under a `*` token). */
  clientId?: string
  /** `revocationKey` of a token request, `x-ably-revocation-key` of a JWT. */
  revocationKey?: string
}

/** The clientId a message or connection is attributed to, checking it against the credentials. */
export function effectiveClientId(p: Principal, requested: string | undefined): string | undefined | null {
  if (requested === undefined || requested === null) return p.clientId === '*' ? undefined : p.clientId
  checkClientIdLength(requested)
  if ((p.kind === 'basic' && p.clientId === undefined) || p.clientId === '*' || p.clientId === requested)
    return requested
  return null
}
