import { t } from 'elysia'

/** Schemas of the LiveObjects REST interface (validation + the OpenAPI document). */
const Q = (fields: Record<string, ReturnType<typeof t.String>>) =>
  t.Object(Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, t.Optional(v)])), { additionalProperties: true })

export const NamespaceListParams = Q({
  limit: t.String({ description: 'page size, default 100, max 1000' }),
  cursor: t.String({ description: 'page position, from a Link header' }),
})
export const ObjectListParams = Q({
  limit: t.String({ description: 'page size, default 100, max 1000' }),
  prefix: t.String({ description: 'only objects whose id starts with this' }),
  cursor: t.String({ description: 'page position, from a Link header' }),
})
export const HistoryParams = Q({
  start: t.String({ description: 'ms since epoch, inclusive' }),
  end: t.String({ description: 'ms since epoch, inclusive' }),
  limit: t.String({ description: 'page size, default 100, max 1000' }),
  direction: t.String({ description: 'forwards | backwards (default)' }),
  cursor: t.String({ description: 'page position, from a Link header' }),
})
export const AnyQuery = t.Object({}, { additionalProperties: true })

export const NamespaceParam = t.Object({ namespace: t.String() })
export const ObjectParam = t.Object({ namespace: t.String(), object_id: t.String() })

export const PatchBody = t.Object(
  {
    data: t.Any({ description: 'object merged into the state (RFC 7396 JSON Merge Patch: nested objects merged, null removes a key, anything else replaces)' }),
    version: t.Optional(t.Union([t.String({ description: 'apply only if this is the current version (else 409)' }), t.Null()])),
  },
  { additionalProperties: true },
)
