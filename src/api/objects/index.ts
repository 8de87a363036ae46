import { Elysia } from 'elysia'
import type { Core } from '../../core'
import { cursorOf } from '../../core/objects/names'
import { authPlugin } from '../plugins/auth'
import { respond, type Query } from '../plugins/codec'
import { historyQuery, intParam, pageLinks } from '../params'
import * as M from './model'

/** Splits a `limit + 1` result into the page and the `next` link's cursor. */
function paged<T>(items: T[], limit: number, cursor: (last: T) => string) {
  const page = items.slice(0, limit)
  return { page, next: items.length > limit ? { cursor: cursor(page[page.length - 1]!) } : undefined }
}

/**
 * The LiveObjects REST interface (base `{base_url}/liveobjects`). Objects live in namespaces;
 * changes are published on the channel `{namespace}::$objects:{objectId}`.
 */
export const objectRoutes = (core: Core) =>
  new Elysia({ name: 'objects', normalize: false, prefix: '/liveobjects' })
    .use(authPlugin(core))
    .get('', async ({ request, query, principal }) => {
      const q = query as Query
      const limit = intParam(q, 'limit', 100, 1, 1000)
      const items = await core.objects.listNamespaces(principal, q.cursor || undefined, limit)
      const { page, next } = paged(items, limit, (n) => n.namespaceId)
      return respond(request, q, page, { links: pageLinks('liveobjects', q, next) })
    }, { auth: true, query: M.NamespaceListParams, detail: { summary: 'Namespaces of the app (namespaceId, objectCount, lastActivity)' } })

    .get('/:namespace', async ({ request, query, params, principal }) =>
      respond(request, query as Query, await core.objects.namespace(principal, params.namespace)),
    { auth: true, params: M.NamespaceParam, query: M.AnyQuery, detail: { summary: 'One namespace: namespaceId, objectCount, lastActivity' } })

    .get('/:namespace/objects', async ({ request, query, params, principal }) => {
      const q = query as Query
      const limit = intParam(q, 'limit', 100, 1, 1000)
      const items = await core.objects.list(principal, params.namespace, { prefix: q.prefix ?? '', after: q.cursor || undefined, limit })
      const { page, next } = paged(items, limit, (o) => o.objectId)
      return respond(request, q, page, { links: pageLinks('objects', q, next) })
    }, { auth: true, params: M.NamespaceParam, query: M.ObjectListParams, detail: { summary: 'Objects of a namespace, by id (paginated; prefix filter)' } })

    .get('/:namespace/objects/:object_id', async ({ request, query, params, principal }) =>
      respond(request, query as Query, await core.objects.get(principal, params.namespace, params.object_id)),
    { auth: true, params: M.ObjectParam, query: M.AnyQuery, detail: { summary: 'An object: objectId, data, version, timestamp' } })

    .patch('/:namespace/objects/:object_id', async ({ request, query, params, body, principal }) =>
      respond(request, query as Query, await core.objects.update(principal, params.namespace, params.object_id, body)),
    { auth: true, params: M.ObjectParam, query: M.AnyQuery, body: M.PatchBody, detail: { summary: 'Merge data into an object (creates it), optionally only at a given version' } })

    .delete('/:namespace/objects/:object_id', async ({ request, query, params, principal }) =>
      respond(request, query as Query, await core.objects.delete(principal, params.namespace, params.object_id)),
    { auth: true, params: M.ObjectParam, query: M.AnyQuery, detail: { summary: 'Delete an object' } })

    .get('/:namespace/objects/:object_id/history', async ({ request, query, params, principal }) => {
      const q = query as Query
      const hq = historyQuery(q)
      const items = await core.objects.history(principal, params.namespace, params.object_id, hq)
      const { page, next } = paged(items, hq.limit, cursorOf)
      return respond(request, q, page, { links: pageLinks('history', q, next) })
    }, { auth: true, params: M.ObjectParam, query: M.HistoryParams, detail: { summary: 'State changes of an object (paginated)' } })

    .get('/:namespace/objects/:object_id/subscriptions', async ({ request, query, params, principal }) =>
      respond(request, query as Query, await core.objects.subscriptions(principal, params.namespace, params.object_id)),
    { auth: true, params: M.ObjectParam, query: M.AnyQuery, detail: { summary: "Event-stream connections of this node subscribed to the object's channel" } })
