import type { ManagementPrincipal } from '../../core/control/management'
import type { ApiKey, App, Namespace } from '../../core/types'

/** Wire shapes of management records, as the hosted service's Control API returns them. */
export const appView = (a: App) => ({
  accountId: a.accountId,
  id: a.id,
  name: a.name,
  status: a.status,
  tlsOnly: a.tlsOnly,
  apnsUseSandboxEndpoint: false,
  apnsAuthType: null,
  apnsCertificateConfigured: false,
  apnsSigningKeyConfigured: false,
  fcmServiceAccountConfigured: false,
  created: a.created,
  modified: a.modified,
  _links: { self: `/v1/apps/${a.id}` },
})

/** The full key string is shown only when the key is created. */
export const keyView = (k: ApiKey, withSecret = false) => ({
  appId: k.appId,
  id: k.id,
  name: k.name,
  revocableTokens: k.revocableTokens,
  status: k.status,
  key: withSecret ? `${k.appId}.${k.id}:${k.secret}` : `${k.appId}.${k.id}`,
  capability: k.capability,
  created: k.created,
  modified: k.modified,
})

export const namespaceView = (n: Namespace) => {
  const { appId, id, created, modified, ...flags } = n as Namespace & { created?: number; modified?: number }
  return { id, appId, ...flags, created, modified }
}

export const meView = (p: ManagementPrincipal) => ({
  token: {
    id: p.token.id,
    name: p.token.name,
    capabilities: p.token.capabilities,
    expires_at: null,
    last_used_at: null,
  },
  user: { id: 1, email: 'admin@localhost' },
  account: { id: p.account.id, name: p.account.name },
})
