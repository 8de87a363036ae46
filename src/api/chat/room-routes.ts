import { Elysia, t } from 'elysia'
import type { Core } from '../../core'
import { paginated, pageOf } from '../http/pagination'
import { authPlugin } from '../plugins/auth'
import { intParam } from '../http/query'
import { respond } from '../http/responses'
import * as M from './model'

const roomsPage = paginated('rooms', M.RoomListParams)

/**
 * The room routes both chat path prefixes (`/chat`, `/chat/v4`) answer alike: the app's active
 * rooms (paginated by room id), one room, its occupancy, the typing indicator. `label` ends each
 * summary (the API document tells the two paths apart).
 */
export const roomRoutes = (core: Core, prefix: string, label = '') => {
  const chat = core.chat
  return new Elysia({ name: 'chat-rooms', seed: prefix, prefix, normalize: false })
    .use(authPlugin(core))
    .get(
      '/rooms',
      async ({ request, query, principal }) => {
        const limit = intParam(query, 'limit', 100, 1, 1000)
        const rooms = await chat.rooms(principal, query.cursor || undefined, limit)
        return roomsPage(
          request,
          query,
          pageOf(rooms, limit, (r) => r.roomId),
        )
      },
      {
        auth: true,
        query: M.RoomListParams,
        response: { 200: t.Array(M.RoomOut) },
        detail: { summary: `Active chat rooms (paginated)${label}` },
      },
    )
    .get(
      '/rooms/:roomId',
      async ({ request, query, params, principal }) =>
        respond(request, query, await chat.room(principal, params.roomId)),
      {
        auth: true,
        params: M.RoomParam,
        query: M.AnyQuery,
        response: { 200: M.RoomOut },
        detail: { summary: `A chat room: roomId, name, metadata${label}` },
      },
    )
    .get(
      '/rooms/:roomId/occupancy',
      async ({ request, query, params, principal }) =>
        respond(request, query, await chat.occupancy(principal, params.roomId)),
      {
        auth: true,
        params: M.RoomParam,
        query: M.AnyQuery,
        response: { 200: M.OccupancyOut },
        detail: { summary: `Occupancy: connections and presence members${label}` },
      },
    )
    .post(
      '/rooms/:roomId/typing',
      async ({ request, query, params, body, principal }) =>
        respond(request, query, await chat.typing.set(principal, params.roomId, body)),
      {
        auth: true,
        params: M.RoomParam,
        query: M.AnyQuery,
        body: M.TypingBody,
        response: { 200: M.TypingOut },
        detail: { summary: `Typing indicator on or off${label}` },
      },
    )
}
