import { Elysia } from 'elysia'
import type { Core } from '../../core'
import { pageLinks } from '../params'
import { authPlugin } from '../plugins/auth'
import { listRooms } from './rooms-route'
import { respond, type Query } from '../plugins/codec'
import * as M from './model'
import { chatV4Routes } from './v4'
import { chatHistoryQuery, reactionList, reactionToRemove, specMessage, specReaction, specReactionResult } from './wire'

/**
 * The chat interface of the spec (base `{base_url}/chat`), plus the hosted service's versioned
 * paths (`/chat/v4/rooms/...`, see v4.ts). Rate limits are charged in the core (ChatLimits).
 */
export const chatRoutes = (core: Core) =>
  new Elysia({ name: 'chat', normalize: false })
    .use(specChatRoutes(core))
    .use(chatV4Routes(core))

const specChatRoutes = (core: Core) => {
  const chat = core.chat
  return new Elysia({ name: 'chat-spec', prefix: '/chat', normalize: false })
    .use(authPlugin(core))
    .get('/rooms', ({ request, query, principal }) => listRooms(core, request, query as Query, principal),
      { auth: true, query: M.RoomListParams, detail: { summary: 'Active chat rooms (paginated)' } })

    .get('/rooms/:roomId', async ({ request, query, params, principal }) =>
      respond(request, query as Query, await chat.room(principal, params.roomId)),
    { auth: true, params: M.RoomParam, query: M.AnyQuery, detail: { summary: 'A chat room: roomId, name, metadata' } })

    .post('/rooms/:roomId/messages', async ({ request, query, params, body, principal }) => {
      const q = query as Query
      const m = await chat.messages.send(principal, params.roomId, body, q.idempotencyKey)
      return respond(request, q, specMessage(params.roomId)(m), { status: 201 })
    }, { auth: true, params: M.RoomParam, query: M.SendParams, body: M.SendBody, detail: { summary: 'Send a chat message' } })

    .get('/rooms/:roomId/messages', async ({ request, query, params, principal }) => {
      const q = query as Query
      const page = await chat.messages.history(principal, params.roomId, chatHistoryQuery(q), true)
      const links = pageLinks('messages', q, page.next === undefined ? undefined : { cursor: page.next })
      return respond(request, q, page.items.map(specMessage(params.roomId)), { links })
    }, { auth: true, params: M.RoomParam, query: M.HistoryParams, detail: { summary: 'Messages of a room (paginated)' } })

    .get('/rooms/:roomId/messages/:serial', async ({ request, query, params, principal }) =>
      respond(request, query as Query, specMessage(params.roomId)(await chat.messages.get(principal, params.roomId, params.serial))),
    { auth: true, params: M.MessageParam, query: M.AnyQuery, detail: { summary: 'One message in its latest version' } })

    .patch('/rooms/:roomId/messages/:serial', async ({ request, query, params, body, principal }) => {
      const m = await chat.messages.update(principal, params.roomId, params.serial, body, 'merge')
      return respond(request, query as Query, specMessage(params.roomId)(m))
    }, { auth: true, params: M.MessageParam, query: M.AnyQuery, body: M.PatchBody, detail: { summary: 'Update a message (text, metadata, headers)' } })

    .delete('/rooms/:roomId/messages/:serial', async ({ request, query, params, principal }) => {
      const m = await chat.messages.delete(principal, params.roomId, params.serial)
      return respond(request, query as Query, specMessage(params.roomId)(m))
    }, { auth: true, params: M.MessageParam, query: M.AnyQuery, detail: { summary: 'Delete a message (soft: it stays in history, marked deleted)' } })

    .get('/rooms/:roomId/occupancy', async ({ request, query, params, principal }) =>
      respond(request, query as Query, await chat.occupancy(principal, params.roomId)),
    { auth: true, params: M.RoomParam, query: M.AnyQuery, detail: { summary: 'Occupancy: connections and presence members' } })

    .post('/rooms/:roomId/typing', async ({ request, query, params, body, principal }) =>
      respond(request, query as Query, await chat.typing.set(principal, params.roomId, body)),
    { auth: true, params: M.RoomParam, query: M.AnyQuery, body: M.TypingBody, detail: { summary: 'Typing indicator on or off' } })

    .post('/rooms/:roomId/messages/:serial/reactions', async ({ request, query, params, body, principal }) => {
      const r = await chat.reactions.add(principal, params.roomId, params.serial, specReaction(body))
      return respond(request, query as Query, specReactionResult(r), { status: 201 })
    }, { auth: true, params: M.MessageParam, query: M.AnyQuery, body: M.ReactionBody, detail: { summary: 'React to a message' } })

    .get('/rooms/:roomId/messages/:serial/reactions', async ({ request, query, params, principal }) =>
      respond(request, query as Query, reactionList(await chat.reactions.list(principal, params.roomId, params.serial), true)),
    { auth: true, params: M.MessageParam, query: M.AnyQuery, detail: { summary: 'Reactions of a message with per-type summaries' } })

    .delete('/rooms/:roomId/messages/:serial/reactions', async ({ request, query, params, principal }) => {
      const q = query as Query
      const r = await chat.reactions.remove(principal, params.roomId, params.serial, reactionToRemove(q, true))
      return respond(request, q, specReactionResult(r))
    }, { auth: true, params: M.MessageParam, query: M.ReactionDeleteParams, detail: { summary: 'Remove a reaction (type, optional kind)' } })
}
