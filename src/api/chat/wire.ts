import type { ChatMessage } from '../../core/chat/chat-message'
import { checkMetadata } from '../../core/chat/chat-message'
import type { ReactionInput, ReactionList, ReactionResult } from '../../core/chat/message-reactions'
import type { ReactionRecord } from '../../core/chat/ports'
import { parseCount, parseKind, parseName } from '../../core/chat/reactions'
import type { HistoryQuery } from '../../core/types'
import { formatSerial, parseSerial, serialAfter } from '../../core/model/serial'
import { GatewayError } from '../../errors'
import { historyQuery, type Q } from '../http/query'

/**
 * Wire forms of chat. The versioned routes (`/chat/v4`) answer exactly as the hosted Chat API
 * v4 does; the spec's routes (`/chat/rooms`) answer the same messages plus `roomId` and
 * `createdAt`, and take a reaction's name in `type` (see model.ts).
 */
type Body = Record<string, unknown>

export const specMessage = (roomId: string) => (m: ChatMessage) => ({ ...m, roomId, createdAt: m.timestamp })

/** start / end / limit / direction (or the hosted service's orderBy) / cursor (or fromSerial). */
export function chatHistoryQuery(q: Q): HistoryQuery {
  let direction = q.direction
  if (direction === undefined && q.orderBy !== undefined) {
    if (q.orderBy === 'oldestFirst') direction = 'forwards'
    else if (q.orderBy === 'newestFirst') direction = 'backwards'
    else throw new GatewayError(40003, 'Invalid orderBy param: must be oldestFirst or newestFirst')
  }
  const hq = historyQuery({ ...q, direction })
  if (hq.cursor === undefined && q.fromSerial) hq.cursor = fromSerialCursor(q.fromSerial, hq.direction)
  return hq
}

/**
 * `fromSerial` is inclusive (as the hosted service's: the chat client pages back from its attach
 * serial, and the message at that serial is part of "before subscribe"), while a cursor is
 * exclusive: start just past the serial on the side the query comes from.
 */
function fromSerialCursor(raw: string, direction: HistoryQuery['direction']): string {
  const s = parseSerial(raw)
  if (!s || formatSerial(s.ms, s.seq) !== raw) return raw
  if (direction === 'backwards') return serialAfter(s)
  return s.seq > 0 ? formatSerial(s.ms, s.seq - 1) : formatSerial(s.ms - 1, 999_999)
}

const metadataOf = (v: unknown) => (v === undefined || v === null ? undefined : checkMetadata(v))

/** The spec's form `{type: name, kind?, count?, metadata?}`, or the hosted form when `name` is given. */
export function specReaction(b: Body): ReactionInput {
  const hosted = b.name !== undefined && b.name !== null
  const kind = hosted ? parseKind(b.type) : parseKind(b.kind, 'distinct')
  const name = parseName(hosted ? b.name : b.type)
  return { kind, name, count: parseCount(kind, b.count), metadata: metadataOf(b.metadata), clientId: b.clientId }
}

/** The hosted form `{type: kind, name, count?}`. */
export function v4Reaction(b: Body): ReactionInput {
  const kind = parseKind(b.type)
  return { kind, name: parseName(b.name), count: parseCount(kind, b.count), metadata: metadataOf(b.metadata) }
}

/** Which reaction to remove, from query params: the name may be left out for unique. */
export function reactionToRemove(q: Q, spec: boolean): Omit<ReactionInput, 'count' | 'metadata'> {
  const hosted = !spec || (q.name !== undefined && q.name !== '')
  const kind = hosted ? parseKind(q.type) : parseKind(q.kind, 'distinct')
  const raw = hosted ? q.name : q.type
  const name = kind === 'unique' && !raw ? '' : parseName(raw)
  return { kind, name, clientId: q.clientId }
}

const specRecord = (r: ReactionRecord) => {
  const out: Body = { type: r.name, kind: r.kind, clientId: r.clientId, count: r.count, timestamp: r.timestamp }
  if (r.metadata !== undefined) out.metadata = r.metadata
  return out
}

const v4Record = (r: ReactionRecord) => {
  const out: Body = { type: r.kind, name: r.name, clientId: r.clientId, count: r.count, timestamp: r.timestamp }
  if (r.metadata !== undefined) out.metadata = r.metadata
  return out
}

export const specReactionResult = (r: ReactionResult) => ({
  serial: r.serial,
  messageSerial: r.messageSerial,
  ...specRecord(r.reaction),
  summary: r.byName,
  reactions: r.summary,
})

export const reactionList = (l: ReactionList, spec: boolean) => ({
  ...l,
  items: l.items.map(spec ? specRecord : v4Record),
})
