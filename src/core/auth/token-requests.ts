import { GatewayError } from '../../errors'
import { hmacSha256, randomId, safeEqual } from '../../lib/crypto'
import { decimalInteger } from '../../lib/decimal'
import type { Clock, NonceStore } from '../ports'
import type { Limits } from '../limits/limits'
import type { StatsService } from '../stats/stats-service'
import type { Authenticator } from './authenticator'
import { canonicalCapability, intersectCapability, parseCapability } from './capability'
import type { Principal } from './principal'
import { REVOCABLE_TOKEN_MAX_TTL_MS } from './revocation'
import { signToken } from './tokens'
import { requestedRoomClaims } from './user-claims'

export interface TokenDetails {
  token: string
  keyName: string
  issued: number
  expires: number
  capability: string
  clientId?: string
}

export interface TokenRequestSettings {
  tokenDefaultTtlMs: number
  tokenMaxTtlMs: number
  tokenRequestWindowMs: number
  /** Live nonces one account may have (a nonce is never forgotten while live: past this, 429). */
  tokenNoncesPerAccount: number
}

const str = (v: unknown): string | undefined => (v === undefined || v === null ? undefined : String(v))
const absent = (v: unknown) => v === undefined || v === null || v === ''

/**
 * `POST /keys/{keyName}/requestToken`: a signed TokenRequest (keyName, timestamp, nonce, mac)
 * needs no other credentials; an unsigned one needs Basic auth with that key. A token of a key
 * with revocableTokens carries what revocations match on (issue time, clientId, an optional
 * `revocationKey`) and lives at most an hour.
 */
export class TokenRequests {
  constructor(
    private readonly auth: Authenticator,
    private readonly nonces: NonceStore,
    private readonly limits: Limits,
    private readonly stats: StatsService,
    private readonly clock: Clock,
    private readonly s: TokenRequestSettings,
  ) {}

  async request(
    keyName: string,
    body: Record<string, unknown>,
    principal: () => Promise<Principal>,
  ): Promise<TokenDetails> {
    const { key, app } = await this.auth.key(keyName)
    await this.limits.take(app.accountId, 'tokenRequests')
    let roomClaims: Record<string, string> | undefined
    if (body.mac !== undefined) {
      if (str(body.keyName) !== keyName) throw new GatewayError(40101, 'Token request keyName does not match the path')
      const timestamp = absent(body.timestamp) ? NaN : decimalInteger(body.timestamp)
      if (timestamp === undefined)
        throw new GatewayError(40003, 'Invalid timestamp: must be an integer of decimal digits (ms since the epoch)')
      const nonce = str(body.nonce) ?? ''
      if (!Number.isFinite(timestamp) || Math.abs(this.clock.now() - timestamp) > this.s.tokenRequestWindowMs)
        throw new GatewayError(40104)
      if (nonce.length < 16) throw new GatewayError(40003, 'Token request nonce must be at least 16 characters')
      const signed =
        [
          keyName,
          str(body.ttl) ?? '',
          str(body.capability) ?? '',
          str(body.clientId) ?? '',
          str(body.timestamp) ?? '',
          nonce,
        ].join('\n') + '\n'
      if (!safeEqual(String(body.mac), hmacSha256(key.secret, signed, 'base64')))
        throw new GatewayError(40101, 'Invalid token request: mac mismatch')
      await this.claimNonce(app.accountId, `${keyName}:${nonce}:${timestamp}`)
    } else {
      const p = await principal()
      if (p.kind !== 'basic') throw new GatewayError(40162, 'An unsigned token request requires Basic authentication')
      if (p.keyName !== keyName) throw new GatewayError(40101, 'Credentials do not belong to the requested key')
      // the key holder itself asks: its room claims are trusted (a signed request's are not, see user-claims.ts)
      roomClaims = requestedRoomClaims(body)
    }

    // tokens of a key with revocable tokens live at most an hour (the hosted service's rule)
    const maxTtl = key.revocableTokens
      ? Math.min(this.s.tokenMaxTtlMs, REVOCABLE_TOKEN_MAX_TTL_MS)
      : this.s.tokenMaxTtlMs
    // plain decimal digits only: Number() would read "0x10" as a 16 ms ttl
    const ttl = absent(body.ttl) ? Math.min(this.s.tokenDefaultTtlMs, maxTtl) : decimalInteger(body.ttl)
    if (ttl === undefined || ttl <= 0)
      throw new GatewayError(40003, 'Invalid ttl: must be a positive integer of decimal digits (ms)')
    if (ttl > maxTtl)
      throw new GatewayError(
        40003,
        `Invalid ttl: exceeds maximum of ${maxTtl} ms${key.revocableTokens ? ' for a key with revocable tokens' : ''}`,
      )

    const clientId = str(body.clientId)
    if (clientId === '') throw new GatewayError(40012, 'clientId must not be an empty string')
    // not covered by a TokenRequest's mac: it can only make the token easier to revoke
    const revocationKey = str(body.revocationKey)
    if (revocationKey === '') throw new GatewayError(40003, 'revocationKey must not be an empty string')

    const wanted =
      body.capability === undefined || body.capability === null || body.capability === ''
        ? key.capability
        : parseCapability(body.capability)
    const cap = intersectCapability(key.capability, wanted)
    // 401, not the table's 403 (a refused operation): the credentials asked for cannot be issued,
    // and the hosted service answers 40160 on credentials with 401 (ably-wire.md §14)
    if (!cap) throw new GatewayError(40160, 'Requested capability has no intersection with the key', { status: 401 })

    const issued = this.clock.now()
    const details: TokenDetails = {
      token: '',
      keyName,
      issued,
      expires: issued + ttl,
      capability: canonicalCapability(cap),
    }
    if (clientId !== undefined) details.clientId = clientId
    details.token = signToken(
      key,
      { ...details, revocable: key.revocableTokens, revocationKey, roomClaims },
      randomId(8),
    )
    this.stats.tokenRequestSucceeded(key.appId, app.accountId)
    return details
  }

  /**
   * Records a signed request's nonce for as long as its timestamp is current, or refuses the
   * request: a replay (40105), or no room for another nonce (429 for the account's bound, 503
   * for the node's). A live nonce is never dropped to make room: that would let its signed
   * request be replayed.
   */
  private async claimNonce(accountId: string, nonce: string): Promise<void> {
    const ttl = this.s.tokenRequestWindowMs * 2
    const retryAfter = { 'retry-after': String(Math.ceil(ttl / 1000)) }
    switch (await this.nonces.claim(accountId, nonce, ttl, this.s.tokenNoncesPerAccount)) {
      case 'claimed':
        return
      case 'seen':
        throw new GatewayError(40105)
      case 'scopeFull':
        throw new GatewayError(
          42910,
          `Rate limit exceeded: this account has ${this.s.tokenNoncesPerAccount} signed token requests in the replay window; retry when they expire`,
          { headers: retryAfter },
        )
      case 'storeFull':
        throw new GatewayError(50003, 'Too many signed token requests in the replay window; retry later', {
          headers: retryAfter,
        })
    }
  }
}
