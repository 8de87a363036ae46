import { GatewayError } from '../../errors'
import { randomId, sha256Hex } from '../../lib/crypto'
import type { Clock, ControlStore } from '../ports'

export interface BootstrapSettings {
  bootstrapKey: string
  bootstrapAccessToken: string
  bootstrapAccountId: string
}

export interface BootstrapResult {
  accountId: string
  appId: string
  /** Present only when generated now (not given by the environment): the secrets to print once. */
  created?: { key?: string; accessToken?: string }
}

/** What an account's own access token may do. */
export const MANAGEMENT_CAPABILITIES = [
  'read:app', 'write:app', 'read:key', 'write:key', 'read:namespace', 'write:namespace', 'read:queue', 'write:queue',
  'read:rule', 'write:rule', 'read:stats',
]

/** The operator's extra capabilities (bootstrap token): list and create accounts (multi-tenant provisioning). */
export const OPERATOR_CAPABILITIES = ['read:account', 'write:account']

/** Parses `appId.keyId:secret`; throws on anything else. */
export function parseKeyString(key: string): { appId: string; keyId: string; secret: string } {
  const m = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+):(.+)$/.exec(key)
  if (!m) throw new GatewayError(40101, 'Invalid key: expected appId.keyId:secret')
  return { appId: m[1]!, keyId: m[2]!, secret: m[3]! }
}

/**
 * On a fresh store: one account, one app, a root key `{"*":["*"]}` and a management access
 * token. A BOOTSTRAP_KEY / BOOTSTRAP_ACCESS_TOKEN that is missing from an existing store is added.
 */
export async function bootstrap(control: ControlStore, clock: Clock, s: BootstrapSettings): Promise<BootstrapResult> {
  const now = clock.now()
  const fixedKey = s.bootstrapKey ? parseKeyString(s.bootstrapKey) : undefined
  const accounts = await control.listAccounts()
  const created: NonNullable<BootstrapResult['created']> = {}

  let account = s.bootstrapAccountId ? await control.getAccount(s.bootstrapAccountId) : accounts[0]
  if (!account) {
    account = { id: s.bootstrapAccountId || randomId(8), name: 'default', created: now }
    await control.createAccount(account)
  }

  let appId = fixedKey?.appId
  if (!appId) appId = (await control.listApps(account.id))[0]?.id ?? randomId(6)
  if (!(await control.getApp(appId))) {
    await control.createApp({ id: appId, accountId: account.id, name: 'default', status: 'enabled', tlsOnly: false, created: now, modified: now })
  }

  const wantKey = fixedKey ?? (accounts.length === 0 ? { appId, keyId: randomId(6), secret: randomId(32) } : undefined)
  if (wantKey && !(await control.getKey(`${wantKey.appId}.${wantKey.keyId}`))) {
    await control.createKey({
      appId: wantKey.appId, id: wantKey.keyId, name: 'root', secret: wantKey.secret, capability: { '*': ['*'] },
      status: 0, revocableTokens: false, created: now, modified: now,
    })
    if (!fixedKey) created.key = `${wantKey.appId}.${wantKey.keyId}:${wantKey.secret}`
  }

  const token = s.bootstrapAccessToken || (accounts.length === 0 ? randomId(40) : '')
  if (token && !(await control.getAccessTokenByHash(sha256Hex(token)))) {
    await control.createAccessToken({
      id: randomId(12), accountId: account.id, name: 'bootstrap', hash: sha256Hex(token), capabilities: [...MANAGEMENT_CAPABILITIES, ...OPERATOR_CAPABILITIES], created: now,
    })
    if (!s.bootstrapAccessToken) created.accessToken = token
  }
  return { accountId: account.id, appId, created: created.key || created.accessToken ? created : undefined }
}
