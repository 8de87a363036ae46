import { t } from 'elysia'
import { Dict, Int, Json, Ms, Obj, Opt, Str } from '../schemas'
export { StatsList } from '../schemas'
import { AnyQuery, CURSOR, HistoryParams, HISTORY_FIELDS, LIMIT, optionalQuery, param } from '../schemas'

/** Schemas of the channel REST interface (validation + the OpenAPI document). */
const OptStr = t.Optional(t.Union([t.String(), t.Null()]))

export const WireMessage = t.Object(
  {
    id: OptStr,
    name: OptStr,
    data: t.Optional(t.Any({ description: 'string, binary, or JSON object/array' })),
    encoding: OptStr,
    clientId: OptStr,
    connectionKey: OptStr,
    extras: t.Optional(t.Union([t.Record(t.String(), t.Any()), t.Null()])),
  },
  { additionalProperties: true },
)

export const PublishBody = t.Union([WireMessage, t.Array(WireMessage)], {
  examples: [{ name: 'greeting', data: 'hello' }],
})

export const BatchSpec = t.Object(
  { channels: t.Union([t.String(), t.Array(t.String())]), messages: t.Union([WireMessage, t.Array(WireMessage)]) },
  { additionalProperties: true },
)
export const BatchBody = t.Union([BatchSpec, t.Array(BatchSpec)], {
  examples: [{ channels: ['news', 'sport'], messages: { name: 'greeting', data: 'hello' } }],
})

export const TokenRequestBody = t.Optional(
  t.Object(
    {
      keyName: OptStr,
      ttl: t.Optional(t.Union([t.Number(), t.String(), t.Null()])),
      capability: t.Optional(t.Union([t.String(), t.Record(t.String(), t.Array(t.String())), t.Null()])),
      clientId: OptStr,
      timestamp: t.Optional(t.Union([t.Number(), t.String(), t.Null()])),
      nonce: OptStr,
      mac: OptStr,
    },
    {
      additionalProperties: true,
      examples: [{ ttl: 3600000, capability: '{"news":["subscribe"]}', clientId: 'alice' }],
    },
  ),
)

export const RevokeTokensBody = t.Object(
  {
    targets: t.Optional(t.Any({ description: 'array of "clientId:<id>", "revocationKey:<key>" or "channel:<name>"' })),
    issuedBefore: t.Optional(t.Any({ description: 'ms since epoch, at most an hour ago (default now)' })),
    allowReauthMargin: t.Optional(t.Any({ description: 'boolean: apply 30 s from now' })),
  },
  { additionalProperties: true },
)

const Q = optionalQuery
export { AnyQuery, HistoryParams }

/** Message history: the history parameters and the attach point of `history({untilAttach})`. */
export const MessageHistoryParams = Q({
  ...HISTORY_FIELDS,
  from_serial: param('only messages up to and including this serial (a channel attach serial; backwards only)', 64),
})

export const PresenceParams = Q({
  clientId: param('only members of this client', 1024),
  connectionId: param('only members of this connection', 1024),
  limit: LIMIT,
  cursor: CURSOR,
})
export const ChannelListParams = Q({
  prefix: param('only channels whose name starts with this', 1024),
  limit: LIMIT,
  by: param('id (default) | value', 16),
  cursor: CURSOR,
})
export const BatchPresenceParams = Q({
  channels: param('comma-separated channel names', 102_400),
  separator: param('channel name separator (default ,)', 16),
})
export const StatsParams = Q({
  ...HISTORY_FIELDS,
  unit: param('minute (default) | hour | day | month', 16),
  by: param('alias of unit', 16),
})
export const ChannelParam = t.Object({ channel: t.String() })
export const KeyNameParam = t.Object({ keyName: t.String() })

/* Responses (documented, never validated: see api/schemas.ts). */

export const PublishResult = Obj(
  {
    channel: Str(),
    messageId: Str('id of the first message; the others are messageId:index'),
    serials: t.Array(t.String(), { description: 'serial of each message (null for a duplicate)' }),
  },
  'Published',
)

export const MessageOut = Obj({
  id: Str(),
  serial: Str('orders the channel: string order is channel order'),
  timestamp: Ms(),
  action: Int('0 create, 1 update, 2 delete'),
  name: Opt(Str()),
  data: Opt(Json('string, or bytes (base64 with encoding "base64" in JSON)')),
  encoding: Opt(Str()),
  clientId: Opt(Str()),
  connectionId: Opt(Str()),
  extras: Opt(Dict()),
  version: Opt(
    Obj(
      {
        serial: Str('serial of this version (a channel serial: later versions sort later)'),
        timestamp: Ms('when this version was made'),
        clientId: Opt(Str('who made it')),
        description: Opt(Str()),
        metadata: Opt(Dict()),
      },
      'set on updated, deleted and appended messages',
    ),
  ),
})

export const PresenceOut = Obj({
  id: Str(),
  action: Int('1 present, 2 enter, 3 leave, 4 update'),
  clientId: Str(),
  connectionId: Str(),
  timestamp: Ms(),
  data: Opt(Json('string or bytes')),
  encoding: Opt(Str()),
  extras: Opt(Dict()),
})

export const ChannelDetails = Obj({
  channelId: Str(),
  name: Str(),
  status: Obj({
    isActive: t.Boolean(),
    occupancy: Obj({ metrics: Obj({ connections: Int(), subscribers: Int(), presenceMembers: Int() }) }),
  }),
})

export const ChannelList = t.Union([
  t.Array(t.String(), { description: 'channel names (by=id)' }),
  t.Array(ChannelDetails, { description: 'channel details (by=value)' }),
])

export const BatchResult = Obj(
  {
    successCount: Int(),
    failureCount: Int(),
    results: t.Array(Obj({ channel: Str() }), { description: 'per channel: its result or {channel, error}' }),
  },
  'BatchResult',
)

export const RevokeTokensResult = Obj(
  {
    successCount: Int(),
    failureCount: Int(),
    results: t.Array(Obj({ target: Str() }), {
      description: 'per target: {target, issuedBefore, appliesAt} or {target, error}',
    }),
  },
  'RevokeTokensResult',
)

export const ServerTime = t.Array(t.Integer(), { description: '[ms since epoch]' })

export const TokenDetails = Obj({
  token: Str('appId.keyId.payload.mac'),
  keyName: Str(),
  issued: Ms(),
  expires: Ms(),
  capability: Str('JSON capability'),
  clientId: Opt(Str()),
})

/* One message, its changes and its versions (mutable messages). */

export const MessageParams = t.Object({ channel: t.String(), serial: t.String() })

export const AnnotationsParams = Q({ limit: LIMIT, cursor: CURSOR })

const WireAnnotation = t.Object(
  {
    action: t.Optional(t.Union([t.Integer(), t.String()])),
    type: t.String(),
    name: t.Optional(t.String()),
    count: t.Optional(t.Integer()),
    messageSerial: t.Optional(t.String()),
    id: t.Optional(t.String()),
    clientId: t.Optional(t.String()),
  },
  { additionalProperties: true },
)
export const AnnotationBody = t.Union([WireAnnotation, t.Array(WireAnnotation)], {
  examples: [{ action: 0, type: 'reaction:distinct.v1', name: '👍' }],
})
export const AnnotationPublished = t.Object({ serials: t.Array(t.String()) })
export const AnnotationOut = t.Object(
  {
    id: t.String(),
    action: t.Integer({ description: '0 annotation.create, 1 annotation.delete' }),
    serial: t.String(),
    messageSerial: t.String(),
    type: t.String(),
    name: t.Optional(t.String()),
    count: t.Optional(t.Integer()),
    clientId: t.Optional(t.String()),
    timestamp: t.Integer(),
  },
  { additionalProperties: true },
)

export const VersionsParams = Q({
  limit: LIMIT,
  direction: param('forwards (default: oldest first) | backwards', 16),
  cursor: CURSOR,
})

export const MessageChangeBody = t.Object(
  {
    action: t.Optional(
      t.Union([t.Integer(), t.String(), t.Null()], {
        description: '1 (message.update, the default), 2 (message.delete) or 5 (message.append)',
      }),
    ),
    name: OptStr,
    data: t.Optional(t.Any({ description: 'the new data, or for an append the fragment to append' })),
    encoding: OptStr,
    extras: t.Optional(t.Union([t.Record(t.String(), t.Any()), t.Null()])),
    version: t.Optional(
      t.Union([
        t.Object(
          {
            clientId: OptStr,
            description: OptStr,
            metadata: t.Optional(t.Union([t.Record(t.String(), t.Any()), t.Null()])),
          },
          { additionalProperties: true, description: 'the operation: who makes the change and why' },
        ),
        t.Null(),
      ]),
    ),
  },
  {
    additionalProperties: true,
    examples: [{ action: 1, data: 'hello (edited)', version: { description: 'typo' } }],
  },
)

export const ChangeResult = Obj({ versionSerial: Str('serial of the new version') }, 'The change was made')
