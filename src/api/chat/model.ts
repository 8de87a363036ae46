import { t } from 'elysia'
import { AnyQuery, HISTORY_FIELDS, optionalQuery } from '../query-schemas'

/**
 * Schemas of the chat interface (validation + the OpenAPI document). Types are checked here;
 * the rules (non-empty text, header values, reaction kinds...) are the core's, with its messages.
 */
const Obj = t.Record(t.String(), t.Any())
const Opt = <T extends Parameters<typeof t.Optional>[0]>(s: T) => t.Optional(t.Union([s, t.Null()]))

const Q = optionalQuery

export const RoomParam = t.Object({ roomId: t.String({ description: 'room id (name), URL-encoded' }) })
export const MessageParam = t.Object({ roomId: t.String(), serial: t.String({ description: 'message serial' }) })

export const SendBody = t.Object({
  text: t.String({ description: 'message text, required, not empty' }),
  metadata: Opt(Obj),
  headers: Opt(Obj),
}, { additionalProperties: true })

/** PATCH: what is given replaces, what is left out stays. */
export const PatchBody = t.Object({
  text: Opt(t.String()),
  metadata: Opt(Obj),
  headers: Opt(Obj),
  description: Opt(t.String({ description: 'description of the edit' })),
}, { additionalProperties: true })

/** The hosted service's PUT: the whole message (metadata and headers left out are cleared). */
export const PutBody = t.Object({
  message: t.Object({ text: t.String(), metadata: Opt(Obj), headers: Opt(Obj) }, { additionalProperties: true }),
  description: Opt(t.String()),
  metadata: Opt(Obj),
}, { additionalProperties: true })

export const OperationBody = t.Optional(t.Union([t.Object({
  description: Opt(t.String()),
  metadata: Opt(Obj),
}, { additionalProperties: true }), t.Null()]))

export const TypingBody = t.Object({
  clientId: Opt(t.String({ description: 'client typing; default the clientId of the credentials' })),
  isTyping: t.Boolean(),
}, { additionalProperties: true })

/**
 * A reaction, in either form: `{type: "like", metadata?, kind?, count?}` (type is the reaction,
 * kind unique | distinct (default) | multiple) or the hosted service's `{type: kind, name, count?}`.
 */
export const ReactionBody = t.Object({
  type: t.String(),
  name: Opt(t.String()),
  kind: Opt(t.String({ description: 'unique | distinct (default) | multiple' })),
  count: Opt(t.Integer()),
  metadata: Opt(Obj),
  clientId: Opt(t.String()),
}, { additionalProperties: true })

export const V4ReactionBody = t.Object({
  type: t.String({ description: 'unique | distinct | multiple (or reaction:<kind>.v1)' }),
  name: t.String({ description: 'the reaction, e.g. an emoji' }),
  count: Opt(t.Integer({ description: 'multiple only, default 1' })),
  metadata: Opt(Obj),
}, { additionalProperties: true })

export const HistoryParams = Q({
  ...HISTORY_FIELDS,
  orderBy: t.String({ description: 'oldestFirst | newestFirst (alias of direction)' }),
  fromSerial: t.String({ description: 'start after (forwards) or before (backwards) this serial' }),
})

export const RoomListParams = Q({ limit: t.String({ description: 'default 100, max 1000' }), cursor: t.String() })
export const SendParams = Q({ idempotencyKey: t.String({ description: 'a repeat within the idempotency window returns the first message' }) })
export const ReactionDeleteParams = Q({ type: t.String(), name: t.String(), clientId: t.String() })
export const ClientReactionsParams = Q({ forClientId: t.String() })
export { AnyQuery }
