import { GatewayError } from '../../errors'
import type { Principal } from './principal'

/**
 * User claims (the hosted Chat service's `userClaim`): a JWT may carry `ably.room.<room>`,
 * `ably.room.<ns>:*` or `ably.room.*` claims with string values. The most specific one that
 * matches a room is stamped on what the caller does there (chat messages as `userClaim`, typing,
 * room reactions and presence on the room channel as `extras.userClaim`). Only the server sets
 * it: a client-supplied `extras.userClaim` on a room channel is dropped.
 */
export const ROOM_CLAIM_PREFIX = 'ably.room.'

/** The room claims of a JWT's claims set: room pattern -> value (string values only). */
export function roomClaimsOf(claims: Record<string, unknown>): Record<string, string> | undefined {
  let out: Record<string, string> | undefined
  for (const [k, v] of Object.entries(claims)) {
    if (!k.startsWith(ROOM_CLAIM_PREFIX) || typeof v !== 'string') continue
    const pattern = k.slice(ROOM_CLAIM_PREFIX.length)
    if (pattern.length === 0) continue
    ;(out ??= {})[pattern] = v
  }
  return out
}

/** At most this many room claims, of at most this many bytes in all, in a token request. */
const MAX_REQUESTED_CLAIMS = 100
const MAX_REQUESTED_CLAIM_BYTES = 8192

/**
 * The room claims a token request asks for (its `ably.room.<pattern>` fields, named as a JWT
 * names them). Only a request made with the key itself (Basic authentication) may set them: a
 * signed TokenRequest's mac does not cover them, so there anyone holding the request could forge
 * them, and they are ignored. A non-string value, or more than the bounds, is 40003.
 */
export function requestedRoomClaims(body: Record<string, unknown>): Record<string, string> | undefined {
  const keys = Object.keys(body).filter((k) => k.startsWith(ROOM_CLAIM_PREFIX))
  if (!keys.length) return undefined
  let bytes = 0
  for (const k of keys) {
    const v = body[k]
    if (typeof v !== 'string' || k.length === ROOM_CLAIM_PREFIX.length)
      throw new GatewayError(40003, `Invalid token request: ${k} must name a room and have a string value`)
    bytes += k.length + v.length
  }
  if (keys.length > MAX_REQUESTED_CLAIMS || bytes > MAX_REQUESTED_CLAIM_BYTES)
    throw new GatewayError(
      40003,
      `Invalid token request: at most ${MAX_REQUESTED_CLAIMS} room claims of ${MAX_REQUESTED_CLAIM_BYTES} bytes in all`,
    )
  return roomClaimsOf(body)
}

/** The caller's claim for `room`: the exact name, else the longest matching `<ns>:*`, else `*`. */
export function userClaimFor(p: Principal, room: string): string | undefined {
  const claims = p.roomClaims
  if (!claims) return undefined
  const exact = claims[room]
  if (exact !== undefined) return exact
  let best: string | undefined
  let bestLength = -1
  for (const [pattern, value] of Object.entries(claims)) {
    if (!pattern.endsWith(':*') || pattern.length <= bestLength) continue
    if (room.startsWith(pattern.slice(0, -1))) {
      best = value
      bestLength = pattern.length
    }
  }
  return best ?? claims['*']
}

/** The room of a room channel (`<room>::$chat`), or undefined for any other channel. */
export function roomOfChannel(channel: string): string | undefined {
  return channel.endsWith('::$chat') ? channel.slice(0, -'::$chat'.length) : undefined
}

/**
 * Stamps what the caller publishes on `channel` (a message or presence draft): on a room channel,
 * any client-supplied `extras.userClaim` is dropped and the caller's claim for the room set;
 * elsewhere nothing changes.
 */
export function stampUserClaim(d: { extras?: Record<string, unknown> }, p: Principal, channel: string): void {
  const room = roomOfChannel(channel)
  if (room === undefined) return
  const claim = userClaimFor(p, room)
  if (claim === undefined && (d.extras === undefined || !('userClaim' in d.extras))) return
  const { userClaim: _dropped, ...rest } = d.extras ?? {}
  if (claim !== undefined) rest.userClaim = claim
  if (Object.keys(rest).length) d.extras = rest
  else delete d.extras
}
