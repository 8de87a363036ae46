import { t } from 'elysia'
import { AnyQuery, HistoryParams, optionalQuery } from '../query-schemas'

/** Schemas of the LiveObjects REST interface (validation + the OpenAPI document). */
const Q = optionalQuery

export const NamespaceListParams = Q({
  limit: t.String({ description: 'page size, default 100, max 1000' }),
  cursor: t.String({ description: 'page position, from a Link header' }),
})
export const ObjectListParams = Q({
  limit: t.String({ description: 'page size, default 100, max 1000' }),
  prefix: t.String({ description: 'only objects whose id starts with this' }),
  cursor: t.String({ description: 'page position, from a Link header' }),
})
export { AnyQuery, HistoryParams }

export const NamespaceParam = t.Object({ namespace: t.String() })
export const ObjectParam = t.Object({ namespace: t.String(), object_id: t.String() })

export const PatchBody = t.Object(
  {
    data: t.Any({ description: 'object merged into the state (RFC 7396 JSON Merge Patch: nested objects merged, null removes a key, anything else replaces)' }),
    version: t.Optional(t.Union([t.String({ description: 'apply only if this is the current version (else 409)' }), t.Null()])),
  },
  { additionalProperties: true },
)
