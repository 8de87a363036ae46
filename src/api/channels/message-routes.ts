import { Elysia, t } from 'elysia'
import type { Core } from '../../core'
import { GatewayError } from '../../errors'
import { paginated, pageOf } from '../http/pagination'
import { authPlugin } from '../plugins/auth'
import { binaryAllowed, negotiate, respond } from '../http/responses'
import { directionParam, intParam, type Q } from '../http/query'
import * as M from './model'
import { messageToWire } from '../wire/message'

const versionsPage = paginated('versions', M.VersionsParams)

/** `limit` (default 100, max 1000), `direction` (default forwards: oldest first) and `cursor` of a versions query. */
function versionsQuery(q: Q) {
  if (q.cursor !== undefined && q.cursor.length > 64) throw new GatewayError(40003, 'Invalid cursor param')
  return {
    limit: intParam(q, 'limit', 100, 1, 1000),
    direction: q.direction === undefined ? ('forwards' as const) : directionParam(q),
    cursor: q.cursor || undefined,
  }
}

/**
 * One message of a channel by serial, in its latest version; its changes (update, delete, append:
 * channels of namespaces with `mutableMessages`); and its versions. Part of the channel REST
 * interface, as the official client's `getMessage`, `updateMessage`, `deleteMessage`,
 * `appendMessage` and `getMessageVersions` call it.
 */
export const messageRoutes = (core: Core) =>
  new Elysia({ name: 'channel-messages', normalize: false })
    .use(authPlugin(core))
    .get(
      '/channels/:channel/messages/:serial',
      async ({ request, query, params, principal }) => {
        const [m] = await core.annotations.withSummaries(principal.appId, params.channel, [
          await core.messages.get(principal, params.channel, params.serial),
        ])
        return respond(request, query, messageToWire(m!, binaryAllowed(negotiate(request, query))))
      },
      {
        auth: true,
        params: M.MessageParams,
        query: M.AnyQuery,
        response: { 200: M.MessageOut },
        detail: { summary: 'One message in its latest version' },
      },
    )

    .patch(
      '/channels/:channel/messages/:serial',
      async ({ request, query, params, body, principal }) =>
        respond(request, query, {
          versionSerial: await core.messages.change(principal, params.channel, params.serial, body),
        }),
      {
        auth: true,
        params: M.MessageParams,
        query: M.AnyQuery,
        body: M.MessageChangeBody,
        response: { 200: M.ChangeResult },
        detail: { summary: 'Update, delete or append to a message (namespaces with mutableMessages)' },
      },
    )

    .get(
      '/channels/:channel/messages/:serial/versions',
      async ({ request, query, params, principal }) => {
        const q = versionsQuery(query)
        const items = await core.messages.versions(principal, params.channel, params.serial, {
          ...q,
          limit: q.limit + 1,
        })
        const bin = binaryAllowed(negotiate(request, query))
        return versionsPage(
          request,
          query,
          pageOf(items, q.limit, (m) => m.serial),
          (m) => messageToWire(m, bin),
        )
      },
      {
        auth: true,
        params: M.MessageParams,
        query: M.VersionsParams,
        response: { 200: t.Array(M.MessageOut) },
        detail: { summary: 'Versions of a message, oldest first (paginated)' },
      },
    )
