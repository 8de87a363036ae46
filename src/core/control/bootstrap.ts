import { GatewayError } from '../../errors'
import { randomId, sha256Hex } from '../../lib/crypto'
import type { BootstrapSeed, Clock, ControlStore } from '../ports'
import type { Account } from '../types'

export interface BootstrapSettings {
  bootstrapKey: string
  bootstrapAccessToken: string
  bootstrapAccountId: string
  /** Bootstrap anew a store another node found to have lost its data (REDIS_ACCEPT_DATA_LOSS). */
  redisAcceptDataLoss?: boolean
}

export interface BootstrapResult {
  accountId: string
  appId: string
  /** The generation of the store's data this node runs on (see DataGuard). */
  epoch: string
  /** Present only when generated now (not given by the environment): the secrets to print once. */
  created?: { key?: string; accessToken?: string }
}

/** What an account's own access token may do. */
export const MANAGEMENT_CAPABILITIES = [
  'read:app',
  'write:app',
  'read:key',
  'write:key',
  'read:namespace',
  'write:namespace',
  'read:queue',
  'write:queue',
  'read:rule',
  'write:rule',
  'read:stats',
]

/** The operator's extra capabilities (bootstrap token): list and create accounts (multi-tenant provisioning). */
export const OPERATOR_CAPABILITIES = ['read:account', 'write:account']

/** Why a node refuses to start on a store marked lost. */
export const DATA_LOST_AT_START =
  'Refusing to start: another node found the store has lost its data (Redis restarted without persistence?), ' +
  'and bootstrapping a new account over it would silently replace every account, app and key. Restore Redis ' +
  'from its persistence (AOF/RDB), or start one node with REDIS_ACCEPT_DATA_LOSS=true to bootstrap anew ' +
  '(then remove the setting and restart the other nodes).'

/** Parses `appId.keyId:secret`; throws on anything else. */
export function parseKeyString(key: string): { appId: string; keyId: string; secret: string } {
  const m = /^([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+):(.+)$/.exec(key)
  if (!m) throw new GatewayError(40101, 'Invalid key: expected appId.keyId:secret')
  return { appId: m[1]!, keyId: m[2]!, secret: m[3]! }
}

/**
 * On a fresh store: one account, one app, a root key `{"*":["*"]}` and a management access
 * token, written by the store in one atomic step with the store's epoch, so that nodes starting
 * together on one empty Redis create them once (the node that wrote them prints the generated
 * secrets; the others print nothing). On an existing store, a BOOTSTRAP_KEY /
 * BOOTSTRAP_ACCESS_TOKEN / BOOTSTRAP_ACCOUNT_ID that is missing is added (fixed values: every
 * node writes the same).
 */
export async function bootstrap(control: ControlStore, clock: Clock, s: BootstrapSettings): Promise<BootstrapResult> {
  const now = clock.now()
  const fixedKey = s.bootstrapKey ? parseKeyString(s.bootstrapKey) : undefined
  const appId = fixedKey?.appId ?? randomId(6)
  const key = fixedKey ?? { appId, keyId: randomId(6), secret: randomId(32) }
  const token = s.bootstrapAccessToken || randomId(40)
  const seed: BootstrapSeed = {
    epoch: randomId(16),
    account: { id: s.bootstrapAccountId || randomId(8), name: 'default', created: now },
    app: { id: appId, accountId: '', name: 'default', status: 'enabled', tlsOnly: false, created: now, modified: now },
    key: {
      appId,
      id: key.keyId,
      name: 'root',
      secret: key.secret,
      capability: { '*': ['*'] },
      status: 0,
      revocableTokens: false,
      created: now,
      modified: now,
    },
    token: {
      id: randomId(12),
      accountId: '',
      name: 'bootstrap',
      hash: sha256Hex(token),
      capabilities: [...MANAGEMENT_CAPABILITIES, ...OPERATOR_CAPABILITIES],
      created: now,
    },
  }
  seed.app.accountId = seed.token.accountId = seed.account.id
  const outcome = await control.bootstrap(seed, s.redisAcceptDataLoss ?? false)
  if (outcome.status === 'lost') throw new Error(DATA_LOST_AT_START)
  if (outcome.status === 'seeded') {
    const created = {
      ...(fixedKey ? {} : { key: `${appId}.${key.keyId}:${key.secret}` }),
      ...(s.bootstrapAccessToken ? {} : { accessToken: token }),
    }
    const shown = created.key || created.accessToken ? created : undefined
    return { accountId: seed.account.id, appId, epoch: outcome.epoch, created: shown }
  }
  return { ...(await addFixed(control, seed, fixedKey !== undefined, s)), epoch: outcome.epoch }
}

/** On an existing store: adds the fixed (environment) account, app, key and token where missing. */
async function addFixed(
  control: ControlStore,
  seed: BootstrapSeed,
  fixedKey: boolean,
  s: BootstrapSettings,
): Promise<{ accountId: string; appId: string }> {
  const ownerOfKeyApp = fixedKey ? (await control.getApp(seed.app.id))?.accountId : undefined
  const accountId = s.bootstrapAccountId || ownerOfKeyApp
  let account: Account | undefined = accountId
    ? await control.getAccount(accountId)
    : (await control.listAccounts()).sort((a, b) => a.created - b.created)[0]
  if (!account) {
    account = seed.account
    await control.createAccount(account)
  }
  const appId = fixedKey ? seed.app.id : ((await control.listApps(account.id))[0]?.id ?? seed.app.id)
  if (!(await control.getApp(appId))) await control.createApp({ ...seed.app, id: appId, accountId: account.id })
  if (fixedKey && !(await control.getKey(`${seed.key.appId}.${seed.key.id}`))) await control.createKey(seed.key)
  if (s.bootstrapAccessToken && !(await control.getAccessTokenByHash(seed.token.hash)))
    await control.createAccessToken({ ...seed.token, accountId: account.id })
  return { accountId: account.id, appId }
}
