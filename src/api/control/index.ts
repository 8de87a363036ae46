import { Elysia, t } from 'elysia'
import { Empty, NoContent } from '../schemas'
import type { Core } from '../../core'
import { noContent, respond } from '../http/responses'
import { managementAuth } from '../plugins/management-auth'
import { paginated } from '../http/pagination'
import { statsQuery, type Q } from '../http/query'
import * as M from './model'
import { appView, keyView, meView, namespaceView } from './wire'

const statsPage = paginated('stats', M.StatsQuery)

/** The management interface (`{control_url}/v1`): Bearer access tokens, scoped to their account. */
export const controlRoutes = (core: Core) => {
  const mgmt = core.management
  /** A page of stats (unit defaults to hour here, as the hosted Control API does). */
  const stats = async (request: Request, q: Q, scope: { appId: string } | { accountId: string }) => {
    const { items, next } = await core.stats.page(scope, statsQuery({ unit: 'hour', ...q }, core.clock.now()))
    return statsPage(request, q, { items, next: next === undefined ? undefined : String(next) })
  }
  return new Elysia({ name: 'control', prefix: '/v1', normalize: false })
    .use(managementAuth(core))
    .get('/me', ({ request, query, mp }) => respond(request, query, meView(mp)), {
      capability: '',
      response: { 200: M.MeOut },
      detail: { summary: 'The access token, its user and account' },
    })

    .get(
      '/accounts',
      async ({ request, query }) =>
        respond(
          request,
          query,
          (await mgmt.listAccounts()).map((a) => ({ id: a.id, name: a.name, created: a.created })),
        ),
      {
        capability: 'read:account',
        response: { 200: t.Array(M.AccountOut) },
        detail: { summary: 'List accounts (operator)' },
      },
    )
    .post(
      '/accounts',
      async ({ request, query, body }) => {
        const { account, accessToken } = await mgmt.createAccount(body as { id?: unknown; name?: unknown })
        return respond(
          request,
          query,
          { account: { id: account.id, name: account.name, created: account.created }, accessToken },
          { status: 201 },
        )
      },
      {
        capability: 'write:account',
        body: M.AccountBody,
        response: { 201: M.AccountCreated },
        detail: { summary: 'Create an account with an access token of its own, shown once (operator)' },
      },
    )

    .get(
      '/accounts/:accountId/limits',
      async ({ request, query, params, mp }) =>
        respond(request, query, await mgmt.limits(mp, params.accountId, core.limits)),
      {
        capability: 'read:app',
        params: M.AccountParam,
        response: { 200: M.LimitsOut },
        detail: { summary: 'Rate limits of the account (defaults and overrides; the operator: any account)' },
      },
    )
    .patch(
      '/accounts/:accountId/limits',
      async ({ request, query, params, body, mp }) => {
        await mgmt.setLimits(mp, params.accountId, body as Record<string, unknown>)
        return respond(request, query, await mgmt.limits(mp, params.accountId, core.limits))
      },
      {
        capability: 'write:account',
        params: M.AccountParam,
        body: M.LimitsBody,
        response: { 200: M.LimitsOut },
        detail: { summary: 'Override rate limits of an account (operator only; null restores the default)' },
      },
    )

    .get(
      '/accounts/:accountId/apps',
      async ({ request, query, params, mp }) =>
        respond(request, query, (await mgmt.listApps(mp, params.accountId)).map(appView)),
      {
        capability: 'read:app',
        params: M.AccountParam,
        response: { 200: t.Array(M.AppOut) },
        detail: { summary: 'List apps' },
      },
    )
    .post(
      '/accounts/:accountId/apps',
      async ({ request, query, params, body, mp }) =>
        respond(request, query, appView(await mgmt.createApp(mp, params.accountId, body)), { status: 201 }),
      {
        capability: 'write:app',
        params: M.AccountParam,
        body: M.AppBody,
        response: { 201: M.AppOut },
        detail: { summary: 'Create an app' },
      },
    )
    .patch(
      '/apps/:appId',
      async ({ request, query, params, body, mp }) =>
        respond(request, query, appView(await mgmt.updateApp(mp, params.appId, body))),
      {
        capability: 'write:app',
        params: M.AppParam,
        body: M.AppBody,
        response: { 200: M.AppOut },
        detail: { summary: 'Update an app' },
      },
    )
    .delete(
      '/apps/:appId',
      async ({ request, params, mp }) => {
        await mgmt.deleteApp(mp, params.appId)
        return noContent(request)
      },
      {
        capability: 'write:app',
        params: M.AppParam,
        response: { 204: NoContent },
        detail: { summary: 'Delete an app with its keys, namespaces, rules and queues (in RabbitMQ too)' },
      },
    )

    .get(
      '/apps/:appId/keys',
      async ({ request, query, params, mp }) =>
        respond(
          request,
          query,
          (await mgmt.listKeys(mp, params.appId)).map((k) => keyView(k)),
        ),
      {
        capability: 'read:key',
        params: M.AppParam,
        response: { 200: t.Array(M.KeyOut) },
        detail: { summary: 'List keys (without secrets)' },
      },
    )
    .post(
      '/apps/:appId/keys',
      async ({ request, query, params, body, mp }) =>
        respond(request, query, keyView(await mgmt.createKey(mp, params.appId, body), true), { status: 201 }),
      {
        capability: 'write:key',
        params: M.AppParam,
        body: M.KeyBody,
        response: { 201: M.KeyOut },
        detail: { summary: 'Create a key; the full key string is returned only here' },
      },
    )
    .patch(
      '/apps/:appId/keys/:keyId',
      async ({ request, query, params, body, mp }) =>
        respond(request, query, keyView(await mgmt.updateKey(mp, params.appId, params.keyId, body))),
      {
        capability: 'write:key',
        params: M.KeyParam,
        body: M.KeyBody,
        response: { 200: M.KeyOut },
        detail: { summary: 'Update a key (name, capability)' },
      },
    )
    .post(
      '/apps/:appId/keys/:keyId/revoke',
      async ({ request, query, params, mp }) => {
        await mgmt.revokeKey(mp, params.appId, params.keyId)
        return respond(request, query, {})
      },
      {
        capability: 'write:key',
        params: M.KeyParam,
        response: { 200: Empty },
        detail: { summary: 'Revoke a key and every token issued from it' },
      },
    )

    .get(
      '/apps/:appId/namespaces',
      async ({ request, query, params, mp }) =>
        respond(request, query, (await mgmt.listNamespaces(mp, params.appId)).map(namespaceView)),
      {
        capability: 'read:namespace',
        params: M.AppParam,
        response: { 200: t.Array(M.NamespaceOut) },
        detail: { summary: 'List namespaces (channel rules)' },
      },
    )
    .post(
      '/apps/:appId/namespaces',
      async ({ request, query, params, body, mp }) =>
        respond(request, query, namespaceView(await mgmt.createNamespace(mp, params.appId, body)), {
          status: 201,
        }),
      {
        capability: 'write:namespace',
        params: M.AppParam,
        body: M.NamespaceBody,
        response: { 201: M.NamespaceOut },
        detail: { summary: 'Create a namespace' },
      },
    )
    .patch(
      '/apps/:appId/namespaces/:namespaceId',
      async ({ request, query, params, body, mp }) =>
        respond(request, query, namespaceView(await mgmt.updateNamespace(mp, params.appId, params.namespaceId, body))),
      {
        capability: 'write:namespace',
        params: M.NamespaceParam,
        body: M.NamespaceBody,
        response: { 200: M.NamespaceOut },
        detail: { summary: 'Update a namespace' },
      },
    )
    .delete(
      '/apps/:appId/namespaces/:namespaceId',
      async ({ request, params, mp }) => {
        await mgmt.deleteNamespace(mp, params.appId, params.namespaceId)
        return noContent(request)
      },
      {
        capability: 'write:namespace',
        params: M.NamespaceParam,
        response: { 204: NoContent },
        detail: { summary: 'Delete a namespace' },
      },
    )

    .get(
      '/accounts/:accountId/stats',
      ({ request, query, params, mp }) => {
        mgmt.account(mp, params.accountId)
        return stats(request, query, { accountId: params.accountId })
      },
      {
        capability: 'read:stats',
        params: M.AccountParam,
        query: M.StatsQuery,
        response: { 200: M.StatsList },
        detail: { summary: 'Account statistics' },
      },
    )
    .get(
      '/apps/:appId/stats',
      async ({ request, query, params, mp }) => {
        await mgmt.app(mp, params.appId)
        return stats(request, query, { appId: params.appId })
      },
      {
        capability: 'read:stats',
        params: M.AppParam,
        query: M.StatsQuery,
        response: { 200: M.StatsList },
        detail: { summary: 'App statistics' },
      },
    )
}
