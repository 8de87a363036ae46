import { GatewayError } from '../../errors'
import { safeEqual } from '../../lib/crypto'
import { fromBase64, utf8Decode } from '../../lib/encoding'
import type { Clock, ControlStore, RevocationStore } from '../ports'
import type { ApiKey, App } from '../types'
import { CapabilityMatcher, intersectCapability, parseCapability } from './capability'
import { checkClientIdLength, type Principal } from './principal'
import { Refusals } from './refusals'
import { REVOCABLE_TOKEN_MAX_TTL_MS, revocationError } from './revocation'
import { embeddedToken, parseJwt, parseTokenKeyName, verifyJwt, verifyToken, type TokenClaims } from './tokens'

export interface Credentials {
  /** Raw Authorization header. */
  authorization?: string | null
  /** `key` query parameter (full key string). */
  key?: string
  /** `accessToken` / `access_token` query parameter. */
  accessToken?: string
  /** Raw X-Ably-ClientId header (base64 of the clientId). */
  clientIdHeader?: string | null
  /** A clientId asked for in plain text (the realtime `clientId` connect parameter). */
  clientId?: string
  /** Whether the request arrived over TLS (directly or per a trusted proxy header); asked only when it matters. */
  secure: () => boolean
}

const CACHE_MAX = 20_000

export interface AuthenticatorSettings {
  basicAuthRequiresTls: boolean
  /** Refused credentials remembered at most (0: none), each for at most `refusedCredentialsCacheMs`. */
  refusedCredentialsCacheSize: number
  refusedCredentialsCacheMs: number
}

/** Cache key: the credential exactly as it arrived (header values never hold control characters). */
const rawKey = (c: Credentials): string =>
  c.authorization || (c.key ? '\u0001K' + c.key : c.accessToken ? '\u0001T' + c.accessToken : '')

/** A key of no app at all, presented as a key (Basic auth, a token request): 40101. */
const KEY_NO_APP = () => new GatewayError(40101, 'Invalid credentials: no application for this key')
/** A JWT whose `kid` names a key of no app: 40400 with status 404, as the hosted service answers. */
const JWT_NO_APP = () => new GatewayError(40400, 'Invalid JWT: no application for its key')

/**
 * Turns credentials into a Principal. Verified credentials are cached (Basic until a control
 * change, tokens until expiry) so the hot path costs one map lookup; a revocable token is also
 * checked against its key's revocations (in memory) on every use, cached or not.
 */
export class Authenticator {
  private cache = new Map<string, Principal>()
  private matchers = new Map<string, CapabilityMatcher>()
  private readonly refusals: Refusals

  constructor(
    private readonly control: ControlStore,
    private readonly revocations: RevocationStore,
    private readonly clock: Clock,
    private readonly opts: AuthenticatorSettings,
  ) {
    this.refusals = new Refusals(opts.refusedCredentialsCacheSize, opts.refusedCredentialsCacheMs)
    control.onChange(() => {
      this.cache.clear()
      this.matchers.clear()
      this.refusals.clear()
    })
  }

  async authenticate(c: Credentials): Promise<Principal> {
    return this.cached(c) ?? this.finish(c, await this.verifyAndCache(c))
  }

  /**
   * The principal of credentials verified before, synchronously (the hot path: a map lookup,
   * nothing decoded); undefined when they must be verified first. Throws for an expired token,
   * and for credentials refused within REFUSED_CREDENTIALS_CACHE_MS (refusals.ts).
   */
  cached(c: Credentials): Principal | undefined {
    const raw = rawKey(c)
    const p = this.cache.get(raw)
    if (!p) {
      const refused = this.refusals.get(raw, this.clock.now())
      if (refused) throw refused
      return undefined
    }
    if (p.expires !== undefined && p.expires <= this.clock.now()) {
      this.cache.delete(raw)
      throw this.refuse(raw, new GatewayError(40142, 'Token expired'))
    }
    const revoked = p.revocable && this.revoked(p)
    if (revoked) {
      this.cache.delete(raw)
      throw this.refuse(raw, revoked)
    }
    return this.finish(c, p)
  }

  private async verifyAndCache(c: Credentials): Promise<Principal> {
    const raw = rawKey(c)
    let p: Principal
    try {
      p = await this.verify(this.credentialString(c))
    } catch (e) {
      throw e instanceof GatewayError && e.statusCode < 500 ? this.refuse(raw, e) : e
    }
    const revoked = p.revocable && this.revoked(p)
    if (revoked) throw this.refuse(raw, revoked)
    if (this.cache.size >= CACHE_MAX) this.cache.clear()
    this.cache.set(raw, p)
    return p
  }

  /** Remembers the verdict on credentials (they are refused again at the cost of a lookup); returns it. */
  private refuse(raw: string, err: GatewayError): GatewayError {
    if (raw) this.refusals.remember(raw, err, this.clock.now())
    return err
  }

  /** The 40141 error when a revocation in force now refuses the token of `p`; undefined otherwise. */
  revoked(p: Principal): GatewayError | undefined {
    if (!p.revocable) return undefined
    const now = this.clock.now()
    return revocationError(p, this.revocations.forKey(p.keyName, now), now)
  }

  /**
   * Throws when credentials verified earlier no longer hold: the key was revoked (or its app
   * disabled) or a revocation now refuses the token. For streams opened with them.
   */
  async revalidate(p: Principal): Promise<void> {
    await this.key(p.keyName)
    const revoked = this.revoked(p)
    if (revoked) throw revoked
  }

  private finish(c: Credentials, p: Principal): Principal {
    if (p.kind === 'basic' && this.opts.basicAuthRequiresTls && !c.secure()) throw new GatewayError(40103)
    if (p.tlsOnly && !c.secure()) throw new GatewayError(40311, 'This app accepts only TLS connections')
    if (c.clientIdHeader) return this.withClientId(p, utf8Decode(fromBase64(c.clientIdHeader)))
    return c.clientId ? this.withClientId(p, c.clientId) : p
  }

  /**
   * Resolves the API key named `keyName` and its (enabled) app, or throws 40400 (status 401), `noApp`
   * (40101, 401 by default), 40131 or 40300. A key the app does not have is 40400, a key of no app
   * at all 40101, a JWT naming a key of no app 40400 with 404: the hosted service's answers (ably-js's
   * suites expect each: RSA4 with an app's id, RTN14a/RSP with none, "JWT request with invalid key").
   */
  async key(keyName: string, noApp: () => GatewayError = KEY_NO_APP): Promise<{ key: ApiKey; app: App }> {
    const key = await this.control.getKey(keyName)
    if (!key) {
      const dot = keyName.indexOf('.')
      // 401, not the table's 404: a credential the app does not have (the hosted service's answer)
      if (dot > 0 && (await this.control.getApp(keyName.slice(0, dot))))
        throw new GatewayError(40400, 'Invalid credentials: key not found', { status: 401 })
      throw noApp()
    }
    if (key.status !== 0) throw new GatewayError(40131, 'Key has been revoked')
    const app = await this.control.getApp(key.appId)
    if (!app || app.status !== 'enabled') throw new GatewayError(40300, 'Application disabled')
    return { key, app }
  }

  matcher(canonicalJson: string, parsed?: Record<string, string[]>): CapabilityMatcher {
    let m = this.matchers.get(canonicalJson)
    if (!m) {
      m = new CapabilityMatcher(parsed ?? JSON.parse(canonicalJson))
      if (this.matchers.size >= CACHE_MAX) this.matchers.clear()
      this.matchers.set(canonicalJson, m)
    }
    return m
  }

  /** One string identifying the credential: `B:<keystring>` or `T:<token>`. */
  private credentialString(c: Credentials): string {
    const h = c.authorization
    if (h) {
      const sp = h.indexOf(' ')
      const scheme = h.slice(0, sp).toLowerCase()
      const value = h.slice(sp + 1).trim()
      if (scheme === 'basic') return 'B:' + utf8Decode(fromBase64(value))
      if (scheme === 'bearer') return 'T:' + (value.includes('.') ? value : utf8Decode(fromBase64(value)))
      throw new GatewayError(40101, 'Invalid credentials: unsupported Authorization scheme')
    }
    if (c.key) return 'B:' + c.key
    if (c.accessToken) return 'T:' + c.accessToken
    throw new GatewayError(40101, 'Invalid credentials: no key or token provided')
  }

  private async verify(cred: string): Promise<Principal> {
    return cred.startsWith('B:') ? this.verifyBasic(cred.slice(2)) : this.verifyToken(cred.slice(2))
  }

  private async verifyBasic(keyString: string): Promise<Principal> {
    const colon = keyString.indexOf(':')
    if (colon < 0) throw new GatewayError(40101, 'Invalid credentials: malformed key')
    const { key, app } = await this.key(keyString.slice(0, colon))
    if (!safeEqual(keyString.slice(colon + 1), key.secret)) throw new GatewayError(40101, 'Invalid credentials')
    return {
      kind: 'basic',
      appId: key.appId,
      accountId: app.accountId,
      keyName: `${key.appId}.${key.id}`,
      tlsOnly: app.tlsOnly,
      ...(app.limits?.presenceMaxMembers ? { presenceMaxMembers: app.limits.presenceMaxMembers } : {}),
      capability: this.matcher(JSON.stringify(key.capability), key.capability),
    }
  }

  private async verifyToken(token: string, embedded = false): Promise<Principal> {
    const keyName = parseTokenKeyName(token)
    if (keyName) {
      const { key, app } = await this.key(keyName)
      const claims = verifyToken(token, key)
      return this.tokenPrincipal('token', key, app, claims.capability, claims)
    }
    const jwt = parseJwt(token)
    if (jwt) {
      // an embedded token: the Ably token inside authenticates (one level: it may not wrap another)
      const inner = embeddedToken(jwt)
      if (inner !== undefined) {
        if (embedded) throw new GatewayError(40144, 'Invalid JWT: an embedded token may not wrap another')
        return this.verifyToken(inner, true)
      }
      if (jwt.encrypted) throw new GatewayError(40144, 'Invalid JWT: an encrypted JWT must embed an Ably token')
      if (!jwt.header.kid) throw new GatewayError(40144, 'Invalid JWT: kid (key name) missing')
      const { key, app } = await this.key(jwt.header.kid, JWT_NO_APP)
      const claims = verifyJwt(jwt, key)
      // without x-ably-capability, the key's capability (as the hosted service takes such a JWT)
      if (!claims.capability) return this.tokenPrincipal('jwt', key, app, JSON.stringify(key.capability), claims)
      const cap = intersectCapability(key.capability, parseCapability(claims.capability))
      // 401, not the table's 403: the credentials themselves grant nothing (the hosted service's status for it)
      if (!cap) throw new GatewayError(40160, 'JWT capability has no intersection with the key', { status: 401 })
      return this.tokenPrincipal('jwt', key, app, JSON.stringify(cap), claims)
    }
    throw new GatewayError(40143, 'Token not recognised')
  }

  private tokenPrincipal(
    kind: 'token' | 'jwt',
    key: ApiKey,
    app: App,
    capJson: string,
    claims: TokenClaims,
  ): Principal {
    const { clientId, expires, issued } = claims
    if (expires <= this.clock.now()) throw new GatewayError(40142, 'Token expired')
    // a revocable token must not outlive the revocations that may refuse it (the hosted service's rule)
    if (claims.revocable && expires - issued > REVOCABLE_TOKEN_MAX_TTL_MS)
      throw new GatewayError(
        kind === 'jwt' ? 40144 : 40140,
        `Invalid token: a token of a key with revocable tokens may live at most ${REVOCABLE_TOKEN_MAX_TTL_MS} ms`,
      )
    const p: Principal = {
      kind,
      appId: key.appId,
      accountId: app.accountId,
      keyName: `${key.appId}.${key.id}`,
      clientId,
      expires,
      tlsOnly: app.tlsOnly,
      ...(app.limits?.presenceMaxMembers ? { presenceMaxMembers: app.limits.presenceMaxMembers } : {}),
      capability: this.matcher(capJson),
    }
    if (claims.revocable) p.revocable = { issued, clientId, revocationKey: claims.revocationKey }
    if (claims.roomClaims) p.roomClaims = claims.roomClaims
    return p
  }

  /** The principal acting as `clientId` (Basic and wildcard credentials may; others must already be it). */
  private withClientId(p: Principal, clientId: string): Principal {
    if (!clientId || clientId === '*') throw new GatewayError(40012, `Invalid clientId "${clientId}"`)
    if (p.clientId === clientId) return p
    checkClientIdLength(clientId)
    if (p.kind === 'basic' || p.clientId === '*') return { ...p, clientId }
    throw new GatewayError(40102, 'The requested clientId does not match the clientId of the credentials')
  }
}
