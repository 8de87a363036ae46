import type { Core } from '../../core'
import type { Principal } from '../../core/auth/principal'
import { paginated, pageOf } from '../pagination'
import { intParam, type Q } from '../query'
import { RoomListParams } from './model'

/** `GET .../rooms` of both chat path prefixes: the app's active rooms, paginated by room id. */
export async function listRooms(core: Core, request: Request, q: Q, principal: Principal): Promise<Response> {
  const limit = intParam(q, 'limit', 100, 1, 1000)
  const rooms = await core.chat.rooms(principal, q.cursor || undefined, limit)
  return roomsPage(
    request,
    q,
    pageOf(rooms, limit, (r) => r.roomId),
  )
}

const roomsPage = paginated('rooms', RoomListParams)
