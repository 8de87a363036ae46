import { Elysia, t } from 'elysia'
import type { Core } from '../../core'
import { cursorOf } from '../../core/objects/names'
import { authPlugin } from '../plugins/auth'
import { respond } from '../http/responses'
import { paginated, pageOf } from '../http/pagination'
import { historyQuery, intParam } from '../http/query'
import * as M from './model'

const namespacesPage = paginated('liveobjects', M.NamespaceListParams)
const objectsPage = paginated('objects', M.ObjectListParams)
const historyPage = paginated('history', M.HistoryParams)

/**
 * The LiveObjects REST interface (base `{base_url}/liveobjects`). Objects live in namespaces;
 * changes are published on the channel `{namespace}::$objects:{objectId}`.
 */
export const objectRoutes = (core: Core) =>
  new Elysia({ name: 'objects', normalize: false, prefix: '/liveobjects' })
    .use(authPlugin(core))
    .get(
      '',
      async ({ request, query, principal }) => {
        const limit = intParam(query, 'limit', 100, 1, 1000)
        const items = await core.objects.listNamespaces(principal, query.cursor || undefined, limit)
        return namespacesPage(
          request,
          query,
          pageOf(items, limit, (n) => n.namespaceId),
        )
      },
      {
        auth: true,
        query: M.NamespaceListParams,
        response: { 200: t.Array(M.NamespaceOut) },
        detail: { summary: 'Namespaces of the app (namespaceId, objectCount, lastActivity)' },
      },
    )

    .get(
      '/:namespace',
      async ({ request, query, params, principal }) =>
        respond(request, query, await core.objects.namespace(principal, params.namespace)),
      {
        auth: true,
        params: M.NamespaceParam,
        query: M.AnyQuery,
        response: { 200: M.NamespaceOut },
        detail: { summary: 'One namespace: namespaceId, objectCount, lastActivity' },
      },
    )

    .get(
      '/:namespace/objects',
      async ({ request, query, params, principal }) => {
        const limit = intParam(query, 'limit', 100, 1, 1000)
        const items = await core.objects.list(principal, params.namespace, {
          prefix: query.prefix ?? '',
          after: query.cursor || undefined,
          limit,
        })
        return objectsPage(
          request,
          query,
          pageOf(items, limit, (o) => o.objectId),
        )
      },
      {
        auth: true,
        params: M.NamespaceParam,
        query: M.ObjectListParams,
        response: { 200: t.Array(M.ObjectOut) },
        detail: { summary: 'Objects of a namespace, by id (paginated; prefix filter)' },
      },
    )

    .get(
      '/:namespace/objects/:object_id',
      async ({ request, query, params, principal }) =>
        respond(request, query, await core.objects.get(principal, params.namespace, params.object_id)),
      {
        auth: true,
        params: M.ObjectParam,
        query: M.AnyQuery,
        response: { 200: M.ObjectOut },
        detail: { summary: 'An object: objectId, data, version, timestamp' },
      },
    )

    .patch(
      '/:namespace/objects/:object_id',
      async ({ request, query, params, body, principal }) =>
        respond(request, query, await core.objects.update(principal, params.namespace, params.object_id, body)),
      {
        auth: true,
        params: M.ObjectParam,
        query: M.AnyQuery,
        body: M.PatchBody,
        response: { 200: M.ObjectOut },
        detail: { summary: 'Merge data into an object (creates it), optionally only at a given version' },
      },
    )

    .delete(
      '/:namespace/objects/:object_id',
      async ({ request, query, params, principal }) =>
        respond(request, query, await core.objects.delete(principal, params.namespace, params.object_id)),
      {
        auth: true,
        params: M.ObjectParam,
        query: M.AnyQuery,
        response: { 200: M.DeletedOut },
        detail: { summary: 'Delete an object' },
      },
    )

    .get(
      '/:namespace/objects/:object_id/history',
      async ({ request, query, params, principal }) => {
        const hq = historyQuery(query)
        const items = await core.objects.history(principal, params.namespace, params.object_id, hq)
        return historyPage(request, query, pageOf(items, hq.limit, cursorOf))
      },
      {
        auth: true,
        params: M.ObjectParam,
        query: M.HistoryParams,
        response: { 200: t.Array(M.ChangeOut) },
        detail: { summary: 'State changes of an object (paginated)' },
      },
    )

    .get(
      '/:namespace/objects/:object_id/subscriptions',
      async ({ request, query, params, principal }) =>
        respond(request, query, await core.objects.subscriptions(principal, params.namespace, params.object_id)),
      {
        auth: true,
        params: M.ObjectParam,
        query: M.AnyQuery,
        response: { 200: M.SubscriptionsOut },
        detail: { summary: "Event-stream connections of this node subscribed to the object's channel" },
      },
    )
