import type { Core } from '../../core'
import type { Principal } from '../../core/auth/principal'
import { respond, type Query } from '../plugins/codec'
import { intParam, pageLinks, pageOf } from '../params'

/** `GET .../rooms` of both chat path prefixes: the app's active rooms, paginated by room id. */
export async function listRooms(core: Core, request: Request, q: Query, principal: Principal): Promise<Response> {
  const limit = intParam(q, 'limit', 100, 1, 1000)
  const { page, next } = pageOf(await core.chat.rooms(principal, q.cursor || undefined, limit), limit, (r) => r.roomId)
  return respond(request, q, page, { links: pageLinks('rooms', q, next) })
}
