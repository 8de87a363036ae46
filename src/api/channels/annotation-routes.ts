import { Elysia, t } from 'elysia'
import type { Core } from '../../core'
import { paginated } from '../http/pagination'
import { authPlugin } from '../plugins/auth'
import { respond } from '../http/responses'
import { DEFAULT_PAGE_LIMIT, intParam } from '../http/query'
import { annotationToWire } from '../wire/annotation'
import * as M from './model'

const annotationsPage = paginated('annotations', M.AnnotationsParams)

/**
 * Annotations of one message, as the official client's `channel.annotations.publish`, `delete`
 * and `get` call them: POST an annotation (or an array of them; a delete is `action: 1`), GET
 * them oldest first, paginated.
 */
export const annotationRoutes = (core: Core) =>
  new Elysia({ name: 'channel-annotations', normalize: false })
    .use(authPlugin(core))
    .post(
      '/channels/:channel/messages/:serial/annotations',
      async ({ request, query, params, body, principal }) => {
        const serials = await core.annotations.publish(principal, params.channel, params.serial, body)
        return respond(request, query, { serials }, { status: 201 })
      },
      {
        auth: true,
        params: M.MessageParams,
        query: M.AnyQuery,
        body: M.AnnotationBody,
        response: { 201: M.AnnotationPublished },
        detail: { summary: 'Annotate a message (or delete an annotation: action 1)' },
      },
    )
    .get(
      '/channels/:channel/messages/:serial/annotations',
      async ({ request, query, params, principal }) => {
        const page = await core.annotations.list(principal, params.channel, params.serial, {
          limit: intParam(query, 'limit', DEFAULT_PAGE_LIMIT, 1, 1000),
          cursor: query.cursor || undefined,
        })
        return annotationsPage(request, query, page, (a) => annotationToWire(a))
      },
      {
        auth: true,
        params: M.MessageParams,
        query: M.AnnotationsParams,
        response: { 200: t.Array(M.AnnotationOut) },
        detail: { summary: 'Annotations of a message, oldest first (paginated)' },
      },
    )
