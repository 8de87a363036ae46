import { GatewayError, notFound } from '../../errors'
import { randomId, sha256Hex } from '../../lib/crypto'
import { parseCapability } from '../auth/capability'
import { compileKey } from '../model/conflation-key'
import { isPerMinute, LIMIT_CLASSES, type LimitClass } from '../limits/limits'
import type { RateLimiter } from '../limits/rate-limiter'
import type { Clock, ControlStore } from '../ports'
import { MANAGEMENT_CAPABILITIES, OPERATOR_CAPABILITIES } from './bootstrap'
import type { AccessToken, Account, ApiKey, App, Namespace } from '../types'

/** Who calls the management interface: an access token and the one account it may see. */
export interface ManagementPrincipal {
  token: AccessToken
  account: Account
}

export type AppInput = { name?: unknown; status?: unknown; tlsOnly?: unknown }
export type KeyInput = { name?: unknown; capability?: unknown; revocableTokens?: unknown }
export type NamespaceInput = Record<string, unknown>

/** Boolean flags of a namespace (channel rule) as the hosted service names them; all default to false. */
export const NAMESPACE_FLAGS = [
  'authenticated',
  'persisted',
  'persistLast',
  'pushEnabled',
  'batchingEnabled',
  'conflationEnabled',
  'tlsOnly',
  'exposeTimeserial',
  'mutableMessages',
  'populateChannelRegistry',
] as const

/** Longest display name of an account, app or key. */
export const MAX_NAME_LENGTH = 256
/** Longest `batchingInterval` / `conflationInterval` of a namespace (ms). */
export const MAX_NAMESPACE_INTERVAL_MS = 60_000
/** Longest `conflationKey` of a namespace. */
export const MAX_CONFLATION_KEY_LENGTH = 256

const bad = (message: string) => new GatewayError(40000, message)
const str = (v: unknown, field: string, required: boolean, max = MAX_NAME_LENGTH): string | undefined => {
  if (v === undefined || v === null) {
    if (required) throw bad(`${field} is required`)
    return undefined
  }
  if (typeof v !== 'string' || !v.trim()) throw bad(`${field} must be a non-empty string`)
  if (v.length > max) throw bad(`${field} must be at most ${max} characters`)
  return v
}
/** An integer from 0 to `max`; undefined when absent. */
const interval = (v: unknown, field: string, max: number): number | undefined => {
  if (v === undefined) return undefined
  if (!Number.isSafeInteger(v) || (v as number) < 0 || (v as number) > max)
    throw bad(`${field} must be an integer from 0 to ${max}`)
  return v as number
}
const bool = (v: unknown, field: string): boolean | undefined => {
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'boolean') throw bad(`${field} must be a boolean`)
  return v
}
const ID = /^[A-Za-z0-9_-]{1,64}$/
/** Highest rate-limit override (per second, per minute for the management classes). */
export const MAX_LIMIT_OVERRIDE = 1_000_000
/**
 * Lowest rate-limit override, in the same units: one request per 10,000 seconds (minutes). Below
 * it a rate blocks the account in all but name; disabling its apps says so.
 */
export const MIN_LIMIT_OVERRIDE = 0.0001

/**
 * Provisioning of apps, keys and namespaces for the management interface. Every call is scoped
 * to the token's account: another account's resources are simply not found.
 */
export class Management {
  constructor(
    private readonly control: ControlStore,
    private readonly clock: Clock,
    /** Deletes an app with its queues wherever they are (AppRemoval); by default only its records. */
    private readonly removeApp: (appId: string) => Promise<void> = (appId) => control.deleteApp(appId),
  ) {}

  async authenticate(authorization: string | null): Promise<ManagementPrincipal> {
    const m = authorization ? /^Bearer\s+(.+)$/i.exec(authorization) : null
    if (!m) throw new GatewayError(40101, 'Authorization: Bearer <access token> required')
    const token = await this.control.getAccessTokenByHash(sha256Hex(m[1]!.trim()))
    if (!token) throw new GatewayError(40101, 'Invalid access token')
    const account = await this.control.getAccount(token.accountId)
    if (!account) throw new GatewayError(40101, 'Invalid access token')
    return { token, account }
  }

  /** Asserts the token holds `capability` (e.g. `write:key`); 403 / 40160 otherwise. */
  require(p: ManagementPrincipal, capability: string): void {
    if (!p.token.capabilities.includes(capability))
      throw new GatewayError(40160, `The access token lacks the "${capability}" capability`)
  }

  /** Every account (operator tokens only). */
  async listAccounts(): Promise<Account[]> {
    return this.control.listAccounts()
  }

  /**
   * A new account with an access token of its own (shown once), for multi-tenant provisioning by
   * the operator. The new token sees only the new account.
   */
  async createAccount(input: { id?: unknown; name?: unknown }): Promise<{ account: Account; accessToken: string }> {
    const name = str(input.name, 'name', true)!
    const id = input.id === undefined ? randomId(8) : str(input.id, 'id', true)!
    if (!ID.test(id)) throw bad('id must be 1-64 letters, digits, "_" or "-"')
    if (await this.control.getAccount(id)) throw new GatewayError(40900, `Account "${id}" already exists`)
    const now = this.clock.now()
    const account: Account = { id, name, created: now }
    await this.control.createAccount(account)
    const accessToken = randomId(40)
    await this.control.createAccessToken({
      id: randomId(12),
      accountId: id,
      name: `${name} token`,
      hash: sha256Hex(accessToken),
      capabilities: MANAGEMENT_CAPABILITIES,
      created: now,
    })
    return { account, accessToken }
  }

  account(p: ManagementPrincipal, accountId: string): Account {
    if (accountId !== p.account.id) throw notFound(`Account "${accountId}" not found`)
    return p.account
  }

  /** Whether the token is the operator's (it may list, create and set the limits of any account). */
  isOperator(p: ManagementPrincipal): boolean {
    return OPERATOR_CAPABILITIES.every((c) => p.token.capabilities.includes(c))
  }

  /** An account the caller may see the limits of: its own, or any for the operator. */
  private async limitsAccount(p: ManagementPrincipal, accountId: string): Promise<Account> {
    if (accountId === p.account.id) return p.account
    const account = this.isOperator(p) ? await this.control.getAccount(accountId) : undefined
    if (!account) throw notFound(`Account "${accountId}" not found`)
    return account
  }

  /** The account's rate limits: per class, its default, its override and the one in force. */
  async limits(p: ManagementPrincipal, accountId: string, limiter: RateLimiter) {
    const account = await this.limitsAccount(p, accountId)
    return Object.fromEntries(
      LIMIT_CLASSES.map((cls) => {
        const perMinute = isPerMinute(cls)
        const def = limiter.defaultRate(cls) * (perMinute ? 60 : 1)
        const override = account.limits?.[cls]
        return [
          cls,
          {
            unit: perMinute ? 'per minute' : 'per second',
            default: def,
            override: override ?? null,
            effective: override ?? def,
          },
        ]
      }),
    )
  }

  /**
   * Overrides rate limits of any account: the operator's alone (a tenant raising its own limits
   * would defeat them). Each value is a number from MIN_LIMIT_OVERRIDE to MAX_LIMIT_OVERRIDE, or null.
   */
  async setLimits(p: ManagementPrincipal, accountId: string, input: Record<string, unknown>): Promise<void> {
    if (!this.isOperator(p)) throw new GatewayError(40160, 'Only the operator may change rate limits')
    const account = await this.limitsAccount(p, accountId)
    const limits = { ...account.limits }
    for (const [cls, v] of Object.entries(input)) {
      if (!LIMIT_CLASSES.includes(cls as LimitClass))
        throw bad(`unknown limit class "${cls}" (one of ${LIMIT_CLASSES.join(', ')})`)
      if (v === null) delete limits[cls as LimitClass]
      else if (typeof v === 'number' && v >= MIN_LIMIT_OVERRIDE && v <= MAX_LIMIT_OVERRIDE)
        limits[cls as LimitClass] = v
      else throw bad(`limit "${cls}" must be a number from ${MIN_LIMIT_OVERRIDE} up to ${MAX_LIMIT_OVERRIDE}, or null`)
    }
    const next = { ...account, limits }
    await this.control.createAccount(next)
    if (account.id === p.account.id) p.account = next
  }

  async app(p: ManagementPrincipal, appId: string): Promise<App> {
    const app = await this.control.getApp(appId)
    if (!app || app.accountId !== p.account.id) throw notFound(`App "${appId}" not found`)
    return app
  }

  async listApps(p: ManagementPrincipal, accountId: string): Promise<App[]> {
    this.account(p, accountId)
    return this.control.listApps(accountId)
  }

  async createApp(p: ManagementPrincipal, accountId: string, input: AppInput): Promise<App> {
    this.account(p, accountId)
    const now = this.clock.now()
    const app: App = {
      id: randomId(6),
      accountId,
      name: str(input.name, 'name', true)!,
      status: this.status(input.status) ?? 'enabled',
      tlsOnly: bool(input.tlsOnly, 'tlsOnly') ?? false,
      created: now,
      modified: now,
    }
    await this.control.createApp(app)
    return app
  }

  async updateApp(p: ManagementPrincipal, appId: string, input: AppInput): Promise<App> {
    const app = await this.app(p, appId)
    const next: App = {
      ...app,
      name: str(input.name, 'name', false) ?? app.name,
      status: this.status(input.status) ?? app.status,
      tlsOnly: bool(input.tlsOnly, 'tlsOnly') ?? app.tlsOnly,
      modified: this.clock.now(),
    }
    await this.control.createApp(next)
    return next
  }

  async deleteApp(p: ManagementPrincipal, appId: string): Promise<void> {
    await this.app(p, appId)
    await this.removeApp(appId)
  }

  private status(v: unknown): 'enabled' | 'disabled' | undefined {
    if (v === undefined || v === null) return undefined
    if (v !== 'enabled' && v !== 'disabled') throw bad('status must be "enabled" or "disabled"')
    return v
  }

  async listKeys(p: ManagementPrincipal, appId: string): Promise<ApiKey[]> {
    await this.app(p, appId)
    return this.control.listKeys(appId)
  }

  async key(p: ManagementPrincipal, appId: string, keyId: string): Promise<ApiKey> {
    await this.app(p, appId)
    const key = await this.control.getKey(`${appId}.${keyId}`)
    if (!key) throw notFound(`Key "${keyId}" not found`)
    return key
  }

  async createKey(p: ManagementPrincipal, appId: string, input: KeyInput): Promise<ApiKey> {
    await this.app(p, appId)
    if (input.capability === undefined) throw bad('capability is required')
    const now = this.clock.now()
    const key: ApiKey = {
      appId,
      id: randomId(6),
      name: str(input.name, 'name', true)!,
      secret: randomId(43),
      capability: parseCapability(input.capability),
      status: 0,
      revocableTokens: bool(input.revocableTokens, 'revocableTokens') ?? false,
      created: now,
      modified: now,
    }
    await this.control.createKey(key)
    return key
  }

  async updateKey(p: ManagementPrincipal, appId: string, keyId: string, input: KeyInput): Promise<ApiKey> {
    const key = await this.key(p, appId, keyId)
    const next: ApiKey = {
      ...key,
      name: str(input.name, 'name', false) ?? key.name,
      capability: input.capability === undefined ? key.capability : parseCapability(input.capability),
      modified: this.clock.now(),
    }
    await this.control.createKey(next)
    return next
  }

  /** Revoked for good: the key and every token issued from it stop working on every node. */
  async revokeKey(p: ManagementPrincipal, appId: string, keyId: string): Promise<void> {
    const key = await this.key(p, appId, keyId)
    await this.control.createKey({ ...key, status: 1, modified: this.clock.now() })
  }

  async listNamespaces(p: ManagementPrincipal, appId: string): Promise<Namespace[]> {
    await this.app(p, appId)
    return this.control.listNamespaces(appId)
  }

  async createNamespace(p: ManagementPrincipal, appId: string, input: NamespaceInput): Promise<Namespace> {
    await this.app(p, appId)
    const id = str(input.id, 'id', true)!
    if (!ID.test(id)) throw bad('id must be 1-64 letters, digits, "_" or "-"')
    if ((await this.control.listNamespaces(appId)).some((n) => n.id === id))
      throw new GatewayError(40900, `Namespace "${id}" already exists`)
    const now = this.clock.now()
    const ns = this.namespace({ appId, id, created: now, modified: now } as unknown as Namespace, input, true)
    await this.control.putNamespace(ns)
    return ns
  }

  async updateNamespace(p: ManagementPrincipal, appId: string, id: string, input: NamespaceInput): Promise<Namespace> {
    const current = (await this.listNamespaces(p, appId)).find((n) => n.id === id)
    if (!current) throw notFound(`Namespace "${id}" not found`)
    const ns = this.namespace({ ...current, modified: this.clock.now() }, input, false)
    await this.control.putNamespace(ns)
    return ns
  }

  async deleteNamespace(p: ManagementPrincipal, appId: string, id: string): Promise<void> {
    if (!(await this.listNamespaces(p, appId)).some((n) => n.id === id)) throw notFound(`Namespace "${id}" not found`)
    await this.control.deleteNamespace(appId, id)
  }

  private namespace(base: Namespace, input: NamespaceInput, fresh: boolean): Namespace {
    const ns = { ...base } as Namespace
    for (const f of NAMESPACE_FLAGS) {
      const v = bool(input[f], f)
      if (v !== undefined) ns[f] = v
      else if (fresh) ns[f] = false
    }
    const batching = interval(input.batchingInterval, 'batchingInterval', MAX_NAMESPACE_INTERVAL_MS)
    ns.batchingInterval = batching ?? (fresh ? 20 : ns.batchingInterval)
    const conflation = interval(input.conflationInterval, 'conflationInterval', MAX_NAMESPACE_INTERVAL_MS)
    if (conflation !== undefined) ns.conflationInterval = conflation
    if (input.conflationKey !== undefined) {
      const key = str(input.conflationKey, 'conflationKey', false, MAX_CONFLATION_KEY_LENGTH)
      if (key !== undefined) compileKey(key) // the routing and conflation syntax, else 40000
      ns.conflationKey = key
    }
    return ns
  }
}
