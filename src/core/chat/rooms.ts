import { GatewayError, denied } from '../../errors'
import type { Principal } from '../auth/principal'
import { checkChannelName } from '../model/names'

/**
 * A room is the channel `{room}::$chat` (as the hosted service names it): every chat event of
 * the room goes there, in one order, so an event-stream client subscribed to that one channel
 * sees messages, edits, deletes, typing and reactions as they happen. Capabilities name the
 * room (`my-room`, `dms:*`): `::$` sub-channels are authorised as their base name.
 */
export const ROOM_SUFFIX = '::$chat'

/** Event names on the room channel. */
export const CHAT_EVENTS = {
  message: 'chat.message',
  typingStarted: 'typing.started',
  typingStopped: 'typing.stopped',
  reactionCreate: 'reaction.create',
  reactionDelete: 'reaction.delete',
} as const

export const roomChannel = (room: string): string => room + ROOM_SUFFIX

/** Validates a room id as it arrived (URL-decoded): a channel name that holds no `::$`. */
export function checkRoomId(room: unknown): string {
  if (typeof room !== 'string' || room.length === 0)
    throw new GatewayError(40010, 'Invalid room id: must be a non-empty string')
  if (room.includes('::$')) throw new GatewayError(40010, 'Invalid room id: must not contain "::$"')
  checkChannelName(roomChannel(room))
  return room
}

/** A missing room or message: 404 with 40160, as the interface spec states. */
export const missing = (what: string) => new GatewayError(40160, what, { status: 404 })

/** Asserts the principal holds at least one of `ops` on the room; 403 (40160) otherwise. */
export function authorizeRoom(p: Principal, room: string, ...ops: string[]): void {
  const channel = roomChannel(room)
  if (ops.some((op) => p.capability.allows(channel, op))) return
  throw denied(`Operation "${ops.join('" or "')}" not permitted on room "${room}" with the provided capability`)
}
