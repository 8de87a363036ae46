import { Elysia } from 'elysia'
import type { Core } from '../../core'
import { pageLinks } from '../params'
import { authPlugin } from '../plugins/auth'
import { listRooms } from './rooms-route'
import { respond, type Query } from '../plugins/codec'
import * as M from './model'
import { chatHistoryQuery, reactionList, reactionToRemove, v4Reaction } from './wire'

/**
 * The hosted Chat REST API v4 (`/chat/v4/rooms/{roomName}/...`), as the official chat client
 * calls it: its field names (PUT update with `{message, description, metadata}`, POST
 * `.../delete`, reactions `{type, name, count}`) and its answers. Rooms are implicit here: an
 * unused room has an empty history rather than a 404.
 */
export const chatV4Routes = (core: Core) => {
  const chat = core.chat
  return new Elysia({ name: 'chat-v4', prefix: '/chat/v4', normalize: false })
    .use(authPlugin(core))
    .get('/rooms', ({ request, query, principal }) => listRooms(core, request, query as Query, principal),
      { auth: true, query: M.RoomListParams, detail: { summary: 'Active chat rooms (v4 path, paginated)' } })

    .get('/rooms/:roomId', async ({ request, query, params, principal }) =>
      respond(request, query as Query, await chat.room(principal, params.roomId)),
    { auth: true, params: M.RoomParam, query: M.AnyQuery, detail: { summary: 'A chat room (v4 path)' } })

    .post('/rooms/:roomId/messages', async ({ request, query, params, body, principal }) => {
      const q = query as Query
      return respond(request, q, await chat.messages.send(principal, params.roomId, body, q.idempotencyKey), { status: 201 })
    }, { auth: true, params: M.RoomParam, query: M.SendParams, body: M.SendBody, detail: { summary: 'Send a chat message (v4)' } })

    .get('/rooms/:roomId/messages', async ({ request, query, params, principal }) => {
      const q = query as Query
      const page = await chat.messages.history(principal, params.roomId, chatHistoryQuery(q), false)
      const links = pageLinks('messages', q, page.next === undefined ? undefined : { cursor: page.next })
      return respond(request, q, page.items, { links })
    }, { auth: true, params: M.RoomParam, query: M.HistoryParams, detail: { summary: 'Messages of a room (v4, paginated)' } })

    .get('/rooms/:roomId/messages/:serial', async ({ request, query, params, principal }) =>
      respond(request, query as Query, await chat.messages.get(principal, params.roomId, params.serial)),
    { auth: true, params: M.MessageParam, query: M.AnyQuery, detail: { summary: 'One message (v4)' } })

    .put('/rooms/:roomId/messages/:serial', async ({ request, query, params, body, principal }) => {
      const { message, description, metadata } = body
      const m = await chat.messages.update(principal, params.roomId, params.serial,
        { text: message.text, metadata: message.metadata, headers: message.headers, description, operationMetadata: metadata }, 'replace')
      return respond(request, query as Query, m)
    }, { auth: true, params: M.MessageParam, query: M.AnyQuery, body: M.PutBody, detail: { summary: 'Update a message (v4: the whole message)' } })

    .post('/rooms/:roomId/messages/:serial/delete', async ({ request, query, params, body, principal }) => {
      const m = await chat.messages.delete(principal, params.roomId, params.serial, { description: body?.description, operationMetadata: body?.metadata })
      return respond(request, query as Query, m)
    }, { auth: true, params: M.MessageParam, query: M.AnyQuery, body: M.OperationBody, detail: { summary: 'Delete a message (v4, soft)' } })

    .post('/rooms/:roomId/messages/:serial/reactions', async ({ request, query, params, body, principal }) => {
      const r = await chat.reactions.add(principal, params.roomId, params.serial, v4Reaction(body))
      return respond(request, query as Query, { serial: r.serial }, { status: 201 })
    }, { auth: true, params: M.MessageParam, query: M.AnyQuery, body: M.V4ReactionBody, detail: { summary: 'React to a message (v4)' } })

    .delete('/rooms/:roomId/messages/:serial/reactions', async ({ request, query, params, principal }) => {
      const q = query as Query
      const r = await chat.reactions.remove(principal, params.roomId, params.serial, reactionToRemove(q, false))
      return respond(request, q, { serial: r.serial })
    }, { auth: true, params: M.MessageParam, query: M.ReactionDeleteParams, detail: { summary: 'Remove a reaction (v4: ?type=&name=)' } })

    .get('/rooms/:roomId/messages/:serial/reactions', async ({ request, query, params, principal }) =>
      respond(request, query as Query, reactionList(await chat.reactions.list(principal, params.roomId, params.serial), false)),
    { auth: true, params: M.MessageParam, query: M.AnyQuery, detail: { summary: 'Reactions of a message (v4 names)' } })

    .get('/rooms/:roomId/messages/:serial/client-reactions', async ({ request, query, params, principal }) => {
      const q = query as Query
      const own = principal.clientId === '*' ? undefined : principal.clientId
      const list = await chat.reactions.list(principal, params.roomId, params.serial, q.forClientId || own)
      return respond(request, q, list.reactions)
    }, { auth: true, params: M.MessageParam, query: M.ClientReactionsParams, detail: { summary: 'Reaction summary trimmed to one client (v4)' } })

    .get('/rooms/:roomId/occupancy', async ({ request, query, params, principal }) =>
      respond(request, query as Query, await chat.occupancy(principal, params.roomId)),
    { auth: true, params: M.RoomParam, query: M.AnyQuery, detail: { summary: 'Occupancy (v4)' } })

    .post('/rooms/:roomId/typing', async ({ request, query, params, body, principal }) =>
      respond(request, query as Query, await chat.typing.set(principal, params.roomId, body)),
    { auth: true, params: M.RoomParam, query: M.AnyQuery, body: M.TypingBody, detail: { summary: 'Typing indicator (v4 path)' } })
}
