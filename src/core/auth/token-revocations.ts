import { GatewayError, type ErrorBody } from '../../errors'
import { decimalInteger } from '../../lib/decimal'
import type { Limits } from '../limits/limits'
import type { Clock, RevocationStore } from '../ports'
import type { BatchResult, TokenRevocation } from '../types'
import type { Authenticator } from './authenticator'
import type { Principal } from './principal'
import {
  MAX_ISSUED_BEFORE_AGE_MS,
  MAX_REVOCATIONS_PER_KEY,
  MAX_REVOCATION_TARGETS,
  REAUTH_MARGIN_MS,
  REVOCABLE_TOKEN_MAX_TTL_MS,
  TARGET_TYPES,
  parseTarget,
} from './revocation'

export interface RevocationSuccess {
  target: string
  issuedBefore: number
  appliesAt: number
}
export interface RevocationFailure {
  target: string
  error: ErrorBody
}
export type RevocationResult = BatchResult<RevocationSuccess, RevocationFailure>

const badBody = (why: string) => new GatewayError(40001, `Invalid token revocation request: ${why}`)

/**
 * `POST /keys/{keyName}/revokeTokens`: revokes the tokens of a key with revocableTokens that match
 * any of the `targets` and were issued before `issuedBefore` (default now, at most an hour ago),
 * from now on, or 30 s from now with `allowReauthMargin`. Only Basic auth with that very key may
 * ask. Each target succeeds or fails alone (an unknown type is a 400 in its result); the valid ones
 * are stored in one step and reach every node, whose tokens and streams they refuse.
 */
export class TokenRevocations {
  constructor(
    private readonly auth: Authenticator,
    private readonly store: RevocationStore,
    private readonly limits: Limits,
    private readonly clock: Clock,
  ) {}

  async revoke(p: Principal, keyName: string, body: unknown): Promise<RevocationResult> {
    if (p.kind !== 'basic')
      throw new GatewayError(
        40162,
        'Token revocation requires Basic authentication with the key that issued the tokens',
      )
    if (p.keyName !== keyName)
      throw new GatewayError(40101, 'Credentials do not belong to the key whose tokens are to be revoked')
    const { key, app } = await this.auth.key(keyName)
    await this.limits.take(app.accountId, 'tokenRequests')
    if (!key.revocableTokens)
      throw new GatewayError(
        40000,
        `Tokens of key ${keyName} cannot be revoked: the key was not created with revocableTokens enabled`,
      )
    const now = this.clock.now()
    const { targets, issuedBefore, allowReauthMargin } = parseRequest(body, now)
    const appliesAt = allowReauthMargin ? now + REAUTH_MARGIN_MS : now
    const expires = issuedBefore + REVOCABLE_TOKEN_MAX_TTL_MS

    const results: Array<RevocationSuccess | RevocationFailure> = []
    const valid: TokenRevocation[] = []
    for (const target of targets) {
      if (parseTarget(target)) {
        valid.push({ keyName, target, issuedBefore, appliesAt, expires })
        results.push({ target, issuedBefore, appliesAt })
      } else {
        const error = new GatewayError(
          40000,
          `Invalid revocation target "${target}": must be <type>:<value> with type ${TARGET_TYPES.join(', ')}`,
        )
        results.push({ target, error: error.toBody() })
      }
    }
    if (valid.length) {
      if (this.store.forKey(keyName, now).length + valid.length > MAX_REVOCATIONS_PER_KEY)
        throw new GatewayError(
          42910,
          `Too many token revocations in force for key ${keyName} (at most ${MAX_REVOCATIONS_PER_KEY}; each lapses an hour after its issuedBefore)`,
        )
      await this.store.add(valid)
    }
    return { successCount: valid.length, failureCount: targets.length - valid.length, results }
  }
}

function parseRequest(
  body: unknown,
  now: number,
): { targets: string[]; issuedBefore: number; allowReauthMargin: boolean } {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw badBody('must be an object with targets')
  const b = body as Record<string, unknown>
  const targets = b.targets
  if (!Array.isArray(targets) || targets.length === 0 || !targets.every((t) => typeof t === 'string'))
    throw badBody('targets must be a non-empty array of "<type>:<value>" strings')
  if (targets.length > MAX_REVOCATION_TARGETS) throw badBody(`at most ${MAX_REVOCATION_TARGETS} targets`)
  let issuedBefore = now
  if (b.issuedBefore !== undefined && b.issuedBefore !== null) {
    const at = decimalInteger(b.issuedBefore)
    if (at === undefined)
      throw new GatewayError(
        40003,
        'Invalid issuedBefore: must be a time in milliseconds since the epoch (decimal digits)',
      )
    issuedBefore = at
    if (issuedBefore > now) throw new GatewayError(40003, 'Invalid issuedBefore: must not be in the future')
    if (issuedBefore < now - MAX_ISSUED_BEFORE_AGE_MS)
      throw new GatewayError(40003, 'Invalid issuedBefore: must not be more than an hour in the past')
  }
  const margin = b.allowReauthMargin
  if (margin !== undefined && margin !== null && typeof margin !== 'boolean')
    throw badBody('allowReauthMargin must be a boolean')
  return { targets: targets as string[], issuedBefore, allowReauthMargin: margin === true }
}
