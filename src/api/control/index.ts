import { Elysia } from 'elysia'
import type { Core } from '../../core'
import { noContent, respond, type Query } from '../plugins/codec'
import { managementAuth } from '../plugins/management-auth'
import { pageLinks, statsQuery } from '../params'
import * as M from './model'
import { appView, keyView, meView, namespaceView } from './views'


/** The management interface (`{control_url}/v1`): Bearer access tokens, scoped to their account. */
export const controlRoutes = (core: Core) => {
  const mgmt = core.management
  /** A page of stats (unit defaults to hour here, as the hosted Control API does). */
  const stats = async (request: Request, q: Query, scope: { appId: string } | { accountId: string }) => {
    const { items, next } = await core.stats.page(scope, statsQuery({ unit: 'hour', ...q }, core.clock.now()))
    return respond(request, q, items, { links: pageLinks('stats', q, next === undefined ? undefined : { cursor: String(next) }) })
  }
  return new Elysia({ name: 'control', prefix: '/v1', normalize: false })
    .use(managementAuth(core))
    .get('/me', ({ request, query, mp }) => respond(request, query as Query, meView(mp)),
      { capability: '', detail: { summary: 'The access token, its user and account' } })

    .get('/accounts', async ({ request, query }) =>
      respond(request, query as Query, (await mgmt.listAccounts()).map((a) => ({ id: a.id, name: a.name, created: a.created }))),
    { capability: 'read:account', detail: { summary: 'List accounts (operator)' } })
    .post('/accounts', async ({ request, query, body }) => {
      const { account, accessToken } = await mgmt.createAccount(body as { id?: unknown; name?: unknown })
      return respond(request, query as Query, { account: { id: account.id, name: account.name, created: account.created }, accessToken }, { status: 201 })
    }, { capability: 'write:account', body: M.AccountBody, detail: { summary: 'Create an account with an access token of its own, shown once (operator)' } })

    .get('/accounts/:accountId/limits', ({ request, query, params, mp }) =>
      respond(request, query as Query, mgmt.limits(mp, params.accountId, core.limits)),
    { capability: 'read:app', params: M.AccountParam, detail: { summary: 'Rate limits of the account (defaults and overrides)' } })
    .patch('/accounts/:accountId/limits', async ({ request, query, params, body, mp }) => {
      await mgmt.setLimits(mp, params.accountId, body as Record<string, unknown>)
      return respond(request, query as Query, mgmt.limits(mp, params.accountId, core.limits))
    }, { capability: 'write:app', params: M.AccountParam, body: M.LimitsBody, detail: { summary: 'Override rate limits of the account (null restores the default)' } })

    .get('/accounts/:accountId/apps', async ({ request, query, params, mp }) =>
      respond(request, query as Query, (await mgmt.listApps(mp, params.accountId)).map(appView)),
    { capability: 'read:app', params: M.AccountParam, detail: { summary: 'List apps' } })
    .post('/accounts/:accountId/apps', async ({ request, query, params, body, mp }) =>
      respond(request, query as Query, appView(await mgmt.createApp(mp, params.accountId, body)), { status: 201 }),
    { capability: 'write:app', params: M.AccountParam, body: M.AppBody, detail: { summary: 'Create an app' } })
    .patch('/apps/:appId', async ({ request, query, params, body, mp }) =>
      respond(request, query as Query, appView(await mgmt.updateApp(mp, params.appId, body))),
    { capability: 'write:app', params: M.AppParam, body: M.AppBody, detail: { summary: 'Update an app' } })
    .delete('/apps/:appId', async ({ request, params, mp }) => { await mgmt.deleteApp(mp, params.appId); return noContent(request) },
      { capability: 'write:app', params: M.AppParam, detail: { summary: 'Delete an app with its keys and namespaces' } })

    .get('/apps/:appId/keys', async ({ request, query, params, mp }) =>
      respond(request, query as Query, (await mgmt.listKeys(mp, params.appId)).map((k) => keyView(k))),
    { capability: 'read:key', params: M.AppParam, detail: { summary: 'List keys (without secrets)' } })
    .post('/apps/:appId/keys', async ({ request, query, params, body, mp }) =>
      respond(request, query as Query, keyView(await mgmt.createKey(mp, params.appId, body), true), { status: 201 }),
    { capability: 'write:key', params: M.AppParam, body: M.KeyBody, detail: { summary: 'Create a key; the full key string is returned only here' } })
    .patch('/apps/:appId/keys/:keyId', async ({ request, query, params, body, mp }) =>
      respond(request, query as Query, keyView(await mgmt.updateKey(mp, params.appId, params.keyId, body))),
    { capability: 'write:key', params: M.KeyParam, body: M.KeyBody, detail: { summary: 'Update a key (name, capability)' } })
    .post('/apps/:appId/keys/:keyId/revoke', async ({ request, query, params, mp }) => {
      await mgmt.revokeKey(mp, params.appId, params.keyId)
      return respond(request, query as Query, {})
    }, { capability: 'write:key', params: M.KeyParam, detail: { summary: 'Revoke a key and every token issued from it' } })

    .get('/apps/:appId/namespaces', async ({ request, query, params, mp }) =>
      respond(request, query as Query, (await mgmt.listNamespaces(mp, params.appId)).map(namespaceView)),
    { capability: 'read:namespace', params: M.AppParam, detail: { summary: 'List namespaces (channel rules)' } })
    .post('/apps/:appId/namespaces', async ({ request, query, params, body, mp }) =>
      respond(request, query as Query, namespaceView(await mgmt.createNamespace(mp, params.appId, body)), { status: 201 }),
    { capability: 'write:namespace', params: M.AppParam, body: M.NamespaceBody, detail: { summary: 'Create a namespace' } })
    .patch('/apps/:appId/namespaces/:namespaceId', async ({ request, query, params, body, mp }) =>
      respond(request, query as Query, namespaceView(await mgmt.updateNamespace(mp, params.appId, params.namespaceId, body))),
    { capability: 'write:namespace', params: M.NamespaceParam, body: M.NamespaceBody, detail: { summary: 'Update a namespace' } })
    .delete('/apps/:appId/namespaces/:namespaceId', async ({ request, params, mp }) => {
      await mgmt.deleteNamespace(mp, params.appId, params.namespaceId)
      return noContent(request)
    }, { capability: 'write:namespace', params: M.NamespaceParam, detail: { summary: 'Delete a namespace' } })

    .get('/accounts/:accountId/stats', ({ request, query, params, mp }) => {
      mgmt.account(mp, params.accountId)
      return stats(request, query as Query, { accountId: params.accountId })
    }, { capability: 'read:stats', params: M.AccountParam, query: M.StatsQuery, detail: { summary: 'Account statistics' } })
    .get('/apps/:appId/stats', async ({ request, query, params, mp }) => {
      await mgmt.app(mp, params.appId)
      return stats(request, query as Query, { appId: params.appId })
    }, { capability: 'read:stats', params: M.AppParam, query: M.StatsQuery, detail: { summary: 'App statistics' } })
}
