import { Elysia, t } from 'elysia'
import type { Core } from '../../core'
import { paginated } from '../http/pagination'
import { authPlugin } from '../plugins/auth'
import { respond } from '../http/responses'
import * as M from './model'
import { roomRoutes } from './room-routes'
import { chatV4Routes } from './v4'
import { chatHistoryQuery, reactionList, reactionToRemove, specMessage, specReaction, specReactionResult } from './wire'

/**
 * The chat interface of the spec (base `{base_url}/chat`), plus the hosted service's versioned
 * paths (`/chat/v4/rooms/...`, see v4.ts). Rate limits are charged in the core (ChatLimits).
 */
export const chatRoutes = (core: Core) =>
  new Elysia({ name: 'chat', normalize: false })
    .use(roomRoutes(core, '/chat'))
    .use(specChatRoutes(core))
    .use(roomRoutes(core, '/chat/v4', ' (v4 path)'))
    .use(chatV4Routes(core))

const messagesPage = paginated('messages', M.HistoryParams)

const specChatRoutes = (core: Core) => {
  const chat = core.chat
  return new Elysia({ name: 'chat-spec', prefix: '/chat', normalize: false })
    .use(authPlugin(core))
    .post(
      '/rooms/:roomId/messages',
      async ({ request, query, params, body, principal }) => {
        const m = await chat.messages.send(principal, params.roomId, body, query.idempotencyKey)
        return respond(request, query, specMessage(params.roomId)(m), { status: 201 })
      },
      {
        auth: true,
        params: M.RoomParam,
        query: M.SendParams,
        body: M.SendBody,
        response: { 201: M.SpecMessageOut },
        detail: { summary: 'Send a chat message' },
      },
    )

    .get(
      '/rooms/:roomId/messages',
      async ({ request, query, params, principal }) => {
        const page = await chat.messages.history(principal, params.roomId, chatHistoryQuery(query), true)
        return messagesPage(request, query, page, specMessage(params.roomId))
      },
      {
        auth: true,
        params: M.RoomParam,
        query: M.HistoryParams,
        response: { 200: t.Array(M.SpecMessageOut) },
        detail: { summary: 'Messages of a room (paginated)' },
      },
    )

    .get(
      '/rooms/:roomId/messages/:serial',
      async ({ request, query, params, principal }) =>
        respond(
          request,
          query,
          specMessage(params.roomId)(await chat.messages.get(principal, params.roomId, params.serial)),
        ),
      {
        auth: true,
        params: M.MessageParam,
        query: M.AnyQuery,
        response: { 200: M.SpecMessageOut },
        detail: { summary: 'One message in its latest version' },
      },
    )

    .patch(
      '/rooms/:roomId/messages/:serial',
      async ({ request, query, params, body, principal }) => {
        const m = await chat.messages.update(principal, params.roomId, params.serial, body, 'merge')
        return respond(request, query, specMessage(params.roomId)(m))
      },
      {
        auth: true,
        params: M.MessageParam,
        query: M.AnyQuery,
        body: M.PatchBody,
        response: { 200: M.SpecMessageOut },
        detail: { summary: 'Update a message (text, metadata, headers)' },
      },
    )

    .delete(
      '/rooms/:roomId/messages/:serial',
      async ({ request, query, params, principal }) => {
        const m = await chat.messages.delete(principal, params.roomId, params.serial)
        return respond(request, query, specMessage(params.roomId)(m))
      },
      {
        auth: true,
        params: M.MessageParam,
        query: M.AnyQuery,
        response: { 200: M.SpecMessageOut },
        detail: { summary: 'Delete a message (soft: it stays in history, marked deleted)' },
      },
    )

    .post(
      '/rooms/:roomId/messages/:serial/reactions',
      async ({ request, query, params, body, principal }) => {
        const r = await chat.reactions.add(principal, params.roomId, params.serial, specReaction(body))
        return respond(request, query, specReactionResult(r), { status: 201 })
      },
      {
        auth: true,
        params: M.MessageParam,
        query: M.AnyQuery,
        body: M.ReactionBody,
        response: { 201: M.SpecReactionOut },
        detail: { summary: 'React to a message' },
      },
    )

    .get(
      '/rooms/:roomId/messages/:serial/reactions',
      async ({ request, query, params, principal }) =>
        respond(request, query, reactionList(await chat.reactions.list(principal, params.roomId, params.serial), true)),
      {
        auth: true,
        params: M.MessageParam,
        query: M.AnyQuery,
        response: { 200: M.ReactionListOut },
        detail: { summary: 'Reactions of a message with per-type summaries' },
      },
    )

    .delete(
      '/rooms/:roomId/messages/:serial/reactions',
      async ({ request, query, params, principal }) => {
        const r = await chat.reactions.remove(principal, params.roomId, params.serial, reactionToRemove(query, true))
        return respond(request, query, specReactionResult(r))
      },
      {
        auth: true,
        params: M.MessageParam,
        query: M.ReactionDeleteParams,
        response: { 200: M.SpecReactionOut },
        detail: { summary: 'Remove a reaction (type, optional kind)' },
      },
    )
}
