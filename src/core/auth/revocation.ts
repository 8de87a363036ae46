import { GatewayError } from '../../errors'
import type { TokenRevocation } from '../types'
import type { Principal, RevocableClaims } from './principal'

/**
 * The rules of token revocation (the hosted service's): only tokens of a key with revocableTokens
 * can be revoked, and they live at most an hour, so a revocation needs remembering for an hour
 * after `issuedBefore` at most.
 */
export const REVOCABLE_TOKEN_MAX_TTL_MS = 3_600_000
/** `allowReauthMargin` postpones a revocation this long, so clients can renew their tokens first. */
export const REAUTH_MARGIN_MS = 30_000
/** Most targets of one revocation request. */
export const MAX_REVOCATION_TARGETS = 100
/** An `issuedBefore` may lie at most this far in the past. */
export const MAX_ISSUED_BEFORE_AGE_MS = 3_600_000
/** Most revocations of one key in force at once (memory per key is bounded; each expires within the hour). */
export const MAX_REVOCATIONS_PER_KEY = 10_000

export const TARGET_TYPES = ['clientId', 'revocationKey', 'channel'] as const

/** Splits `type:value`; undefined unless the type is one of TARGET_TYPES and the value is not empty. */
export function parseTarget(target: string): { type: (typeof TARGET_TYPES)[number]; value: string } | undefined {
  const i = target.indexOf(':')
  const type = target.slice(0, i) as (typeof TARGET_TYPES)[number]
  const value = target.slice(i + 1)
  return i > 0 && value && TARGET_TYPES.includes(type) ? { type, value } : undefined
}

/**
 * Does the revocation `target` match the token of `p`? `channel:` matches a resource name of the
 * token's capability exactly (`channel:foo:*` matches a token for `foo:*`, not one for `foo:bar`).
 */
function matches(target: string, p: Principal, claims: RevocableClaims): boolean {
  const t = parseTarget(target)
  switch (t?.type) {
    case 'clientId':
      return claims.clientId === t.value
    case 'revocationKey':
      return claims.revocationKey === t.value
    case 'channel':
      return Object.hasOwn(p.capability.capability, t.value)
    default:
      return false
  }
}

/** The 40141 error for the token of `p` when a revocation in force at `now` matches it; undefined otherwise. */
export function revocationError(
  p: Principal,
  revocations: readonly TokenRevocation[],
  now: number,
): GatewayError | undefined {
  const claims = p.revocable
  if (!claims || revocations.length === 0) return undefined
  for (const r of revocations)
    if (r.appliesAt <= now && claims.issued < r.issuedBefore && matches(r.target, p, claims))
      return new GatewayError(40141, `Token revoked (${r.target})`)
  return undefined
}
