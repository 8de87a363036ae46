import { t } from 'elysia'
import { AnyQuery, HistoryParams, optionalQuery } from '../query-schemas'

/** Schemas of the channel REST interface (validation + the OpenAPI document). */
const Str = t.Optional(t.Union([t.String(), t.Null()]))

export const WireMessage = t.Object(
  {
    id: Str,
    name: Str,
    data: t.Optional(t.Any({ description: 'string, binary, or JSON object/array' })),
    encoding: Str,
    clientId: Str,
    connectionKey: Str,
    extras: t.Optional(t.Union([t.Record(t.String(), t.Any()), t.Null()])),
  },
  { additionalProperties: true },
)

export const PublishBody = t.Union([WireMessage, t.Array(WireMessage)])

export const BatchSpec = t.Object(
  { channels: t.Union([t.String(), t.Array(t.String())]), messages: t.Union([WireMessage, t.Array(WireMessage)]) },
  { additionalProperties: true },
)
export const BatchBody = t.Union([BatchSpec, t.Array(BatchSpec)])

export const TokenRequestBody = t.Optional(t.Object(
  {
    keyName: Str,
    ttl: t.Optional(t.Union([t.Number(), t.String(), t.Null()])),
    capability: t.Optional(t.Union([t.String(), t.Record(t.String(), t.Array(t.String())), t.Null()])),
    clientId: Str,
    timestamp: t.Optional(t.Union([t.Number(), t.String(), t.Null()])),
    nonce: Str,
    mac: Str,
  },
  { additionalProperties: true },
))

const Q = optionalQuery
export { AnyQuery, HistoryParams }

export const PresenceParams = Q({ clientId: t.String(), connectionId: t.String(), limit: t.String() })
export const ChannelListParams = Q({ prefix: t.String(), limit: t.String(), by: t.String({ description: 'id (default) | value' }), cursor: t.String() })
export const BatchPresenceParams = Q({ channels: t.String({ description: 'comma-separated channel names' }), separator: t.String() })
export const StatsParams = Q({
  start: t.String(), end: t.String(), limit: t.String(), direction: t.String(),
  unit: t.String({ description: 'minute (default) | hour | day | month' }), by: t.String(), cursor: t.String(),
})
export const ChannelParam = t.Object({ channel: t.String() })
export const KeyNameParam = t.Object({ keyName: t.String() })
