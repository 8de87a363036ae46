import { Elysia, t } from 'elysia'
import type { Core } from '../../core'
import { paginated } from '../http/pagination'
import { DEFAULT_PAGE_LIMIT, intParam } from '../http/query'
import { authPlugin } from '../plugins/auth'
import { respond } from '../http/responses'
import * as M from './model'
import { chatHistoryQuery, reactionList, reactionToRemove, v4Reaction } from './wire'

/**
 * The hosted Chat REST API v4 (`/chat/v4/rooms/{roomName}/...`), as the official chat client
 * calls it: its field names (PUT update with `{message, description, metadata}`, POST
 * `.../delete`, reactions `{type, name, count}`) and its answers. Rooms are implicit here: an
 * unused room has an empty history rather than a 404.
 */
const messagesPage = paginated('messages', M.HistoryParams)
const versionsPage = paginated('versions', M.VersionsParams)

export const chatV4Routes = (core: Core) => {
  const chat = core.chat
  return new Elysia({ name: 'chat-v4', prefix: '/chat/v4', normalize: false })
    .use(authPlugin(core))
    .post(
      '/rooms/:roomId/messages',
      async ({ request, query, params, body, principal }) => {
        return respond(request, query, await chat.messages.send(principal, params.roomId, body, query.idempotencyKey), {
          status: 201,
        })
      },
      {
        auth: true,
        params: M.RoomParam,
        query: M.SendParams,
        body: M.SendBody,
        response: { 201: M.MessageOut },
        detail: { summary: 'Send a chat message (v4)' },
      },
    )

    .get(
      '/rooms/:roomId/messages',
      async ({ request, query, params, principal }) => {
        const page = await chat.messages.history(principal, params.roomId, chatHistoryQuery(query), false)
        return messagesPage(request, query, page)
      },
      {
        auth: true,
        params: M.RoomParam,
        query: M.HistoryParams,
        response: { 200: t.Array(M.MessageOut) },
        detail: { summary: 'Messages of a room (v4, paginated)' },
      },
    )

    .get(
      '/rooms/:roomId/messages/:serial',
      async ({ request, query, params, principal }) =>
        respond(request, query, await chat.messages.get(principal, params.roomId, params.serial)),
      {
        auth: true,
        params: M.MessageParam,
        query: M.AnyQuery,
        response: { 200: M.MessageOut },
        detail: { summary: 'One message (v4)' },
      },
    )

    .get(
      '/rooms/:roomId/messages/:serial/versions',
      async ({ request, query, params, principal }) => {
        const page = await chat.messages.versions(principal, params.roomId, params.serial, {
          limit: intParam(query, 'limit', DEFAULT_PAGE_LIMIT, 1, 1000),
          cursor: query.cursor || undefined,
        })
        return versionsPage(request, query, page)
      },
      {
        auth: true,
        params: M.MessageParam,
        query: M.VersionsParams,
        response: { 200: t.Array(M.MessageOut) },
        detail: { summary: 'Versions of a message, oldest first (v4, paginated)' },
      },
    )

    .put(
      '/rooms/:roomId/messages/:serial',
      async ({ request, query, params, body, principal }) => {
        const { message, description, metadata } = body
        const m = await chat.messages.update(
          principal,
          params.roomId,
          params.serial,
          {
            text: message.text,
            metadata: message.metadata,
            headers: message.headers,
            description,
            operationMetadata: metadata,
          },
          'replace',
        )
        return respond(request, query, m)
      },
      {
        auth: true,
        params: M.MessageParam,
        query: M.AnyQuery,
        body: M.PutBody,
        response: { 200: M.MessageOut },
        detail: { summary: 'Update a message (v4: the whole message)' },
      },
    )

    .post(
      '/rooms/:roomId/messages/:serial/delete',
      async ({ request, query, params, body, principal }) => {
        const m = await chat.messages.delete(principal, params.roomId, params.serial, {
          description: body?.description,
          operationMetadata: body?.metadata,
        })
        return respond(request, query, m)
      },
      {
        auth: true,
        params: M.MessageParam,
        query: M.AnyQuery,
        body: M.OperationBody,
        response: { 200: M.MessageOut },
        detail: { summary: 'Delete a message (v4, soft)' },
      },
    )

    .post(
      '/rooms/:roomId/messages/:serial/reactions',
      async ({ request, query, params, body, principal }) => {
        const r = await chat.reactions.add(principal, params.roomId, params.serial, v4Reaction(body))
        return respond(request, query, { serial: r.serial }, { status: 201 })
      },
      {
        auth: true,
        params: M.MessageParam,
        query: M.AnyQuery,
        body: M.V4ReactionBody,
        response: { 201: M.V4ReactionOut },
        detail: { summary: 'React to a message (v4)' },
      },
    )

    .delete(
      '/rooms/:roomId/messages/:serial/reactions',
      async ({ request, query, params, principal }) => {
        const r = await chat.reactions.remove(principal, params.roomId, params.serial, reactionToRemove(query, false))
        return respond(request, query, { serial: r.serial })
      },
      {
        auth: true,
        params: M.MessageParam,
        query: M.ReactionDeleteParams,
        response: { 200: M.V4ReactionOut },
        detail: { summary: 'Remove a reaction (v4: ?type=&name=)' },
      },
    )

    .get(
      '/rooms/:roomId/messages/:serial/reactions',
      async ({ request, query, params, principal }) =>
        respond(
          request,
          query,
          reactionList(await chat.reactions.list(principal, params.roomId, params.serial), false),
        ),
      {
        auth: true,
        params: M.MessageParam,
        query: M.AnyQuery,
        response: { 200: M.ReactionListOut },
        detail: { summary: 'Reactions of a message (v4 names)' },
      },
    )

    .get(
      '/rooms/:roomId/messages/:serial/client-reactions',
      async ({ request, query, params, principal }) => {
        const own = principal.clientId === '*' ? undefined : principal.clientId
        const list = await chat.reactions.list(principal, params.roomId, params.serial, query.forClientId || own)
        return respond(request, query, list.reactions)
      },
      {
        auth: true,
        params: M.MessageParam,
        query: M.ClientReactionsParams,
        response: { 200: M.ClientReactionsOut },
        detail: { summary: 'Reaction summary trimmed to one client (v4)' },
      },
    )
}
