import { t } from 'elysia'
import { Dict, Int, Ms, Obj, Opt, Str } from '../schemas'
import { AnyQuery, CURSOR, HISTORY_FIELDS, LIMIT, optionalQuery, param } from '../schemas'

/**
 * Schemas of the chat interface (validation + the OpenAPI document). Types are checked here;
 * the rules (non-empty text, header values, reaction kinds...) are the core's, with its messages.
 */
const AnyObj = t.Record(t.String(), t.Any())
const Nullable = <T extends Parameters<typeof t.Optional>[0]>(s: T) => t.Optional(t.Union([s, t.Null()]))

const Q = optionalQuery

export const RoomParam = t.Object({ roomId: t.String({ description: 'room id (name), URL-encoded' }) })
export const MessageParam = t.Object({ roomId: t.String(), serial: t.String({ description: 'message serial' }) })

export const SendBody = t.Object(
  {
    text: t.String({ description: 'message text, required, not empty' }),
    metadata: Nullable(AnyObj),
    headers: Nullable(AnyObj),
  },
  { additionalProperties: true, examples: [{ text: 'hello room', metadata: { mood: 'happy' } }] },
)

/** PATCH: what is given replaces, what is left out stays. */
export const PatchBody = t.Object(
  {
    text: Nullable(t.String()),
    metadata: Nullable(AnyObj),
    headers: Nullable(AnyObj),
    description: Nullable(t.String({ description: 'description of the edit' })),
  },
  { additionalProperties: true },
)

/** The hosted service's PUT: the whole message (metadata and headers left out are cleared). */
export const PutBody = t.Object(
  {
    message: t.Object(
      { text: t.String(), metadata: Nullable(AnyObj), headers: Nullable(AnyObj) },
      { additionalProperties: true },
    ),
    description: Nullable(t.String()),
    metadata: Nullable(AnyObj),
  },
  { additionalProperties: true },
)

export const OperationBody = t.Optional(
  t.Union([
    t.Object(
      {
        description: Nullable(t.String()),
        metadata: Nullable(AnyObj),
      },
      { additionalProperties: true },
    ),
    t.Null(),
  ]),
)

export const TypingBody = t.Object(
  {
    clientId: Nullable(t.String({ description: 'client typing; default the clientId of the credentials' })),
    isTyping: t.Boolean(),
  },
  { additionalProperties: true },
)

/**
 * A reaction, in either form: `{type: "like", metadata?, kind?, count?}` (type is the reaction,
 * kind unique | distinct (default) | multiple) or the hosted service's `{type: kind, name, count?}`.
 */
export const ReactionBody = t.Object(
  {
    type: t.String(),
    name: Nullable(t.String()),
    kind: Nullable(t.String({ description: 'unique | distinct (default) | multiple' })),
    count: Nullable(t.Integer()),
    metadata: Nullable(AnyObj),
    clientId: Nullable(t.String()),
  },
  { additionalProperties: true },
)

export const V4ReactionBody = t.Object(
  {
    type: t.String({ description: 'unique | distinct | multiple (or reaction:<kind>.v1)' }),
    name: t.String({ description: 'the reaction, e.g. an emoji' }),
    count: Nullable(t.Integer({ description: 'multiple only, default 1' })),
    metadata: Nullable(AnyObj),
  },
  { additionalProperties: true },
)

export const HistoryParams = Q({
  ...HISTORY_FIELDS,
  orderBy: param('oldestFirst | newestFirst (alias of direction)', 16),
  fromSerial: param('start after (forwards) or before (backwards) this serial', 256),
})

export const RoomListParams = Q({ limit: LIMIT, cursor: CURSOR })
export const VersionsParams = Q({ limit: LIMIT, cursor: CURSOR })
export const SendParams = Q({
  idempotencyKey: t.String({ description: 'a repeat within the idempotency window returns the first message' }),
})
export const ReactionDeleteParams = Q({ type: t.String(), name: t.String(), clientId: t.String() })
export const ClientReactionsParams = Q({ forClientId: t.String() })
export { AnyQuery }

/* Responses (documented, never validated: see api/schemas.ts). */

export const RoomOut = Obj({ roomId: Str(), name: Str(), metadata: Dict() })
export const OccupancyOut = Obj({ connections: Int(), presenceMembers: Int() })
const ReactionSummary = Dict('per kind: unique, distinct, multiple')

/** A message as the hosted Chat API v4 returns it. */
export const MessageOut = Obj({
  serial: Str('orders the room'),
  clientId: Opt(Str()),
  text: Str(),
  metadata: Dict(),
  headers: Dict(),
  action: Str('message.create | message.update | message.delete'),
  timestamp: Ms('creation time'),
  version: Obj({ serial: Str(), timestamp: Ms(), clientId: Opt(Str()), description: Opt(Str()) }),
  reactions: ReactionSummary,
})

/** The spec routes' message: the v4 message with its room and creation time. */
export const SpecMessageOut = t.Composite([MessageOut, Obj({ roomId: Str(), createdAt: Ms() })], {
  additionalProperties: true,
})

export const TypingOut = Obj({
  currentlyTyping: t.Array(t.String()),
  change: Obj({ clientId: Str(), type: Str('typing.started | typing.stopped') }),
})

const ReactionRecordOut = Obj({ type: Str(), clientId: Opt(Str()), count: Opt(Int()), timestamp: Ms() })

export const SpecReactionOut = Obj({
  serial: Str('serial of the reaction event'),
  messageSerial: Str(),
  type: Str('the reaction'),
  kind: Str(),
  summary: Dict('per reaction: count and clientIds'),
  reactions: ReactionSummary,
})

export const ReactionListOut = Obj({
  messageSerial: Str(),
  items: t.Array(ReactionRecordOut),
  summary: Dict('per reaction: count and clientIds'),
  reactions: ReactionSummary,
})

export const V4ReactionOut = Obj({ serial: Str('serial of the reaction event') })
export const ClientReactionsOut = Dict('per kind, for one client')
