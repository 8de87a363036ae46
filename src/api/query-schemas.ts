import { t } from 'elysia'

/**
 * Query schemas shared by the interfaces (validation + OpenAPI). Values stay strings: the routes
 * parse them with api/params.ts so that bad values get the spec's 40003 errors.
 */
export const optionalQuery = (fields: Record<string, ReturnType<typeof t.String>>) =>
  t.Object(Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, t.Optional(v)])), { additionalProperties: true })

export const HISTORY_FIELDS = {
  start: t.String({ description: 'ms since epoch, inclusive' }),
  end: t.String({ description: 'ms since epoch, inclusive' }),
  limit: t.String({ description: 'page size, default 100, max 1000' }),
  direction: t.String({ description: 'forwards | backwards (default)' }),
  cursor: t.String({ description: 'page position, from a Link header' }),
}

export const HistoryParams = optionalQuery(HISTORY_FIELDS)

/** Any query (unknown parameters such as `rnd` are accepted and ignored). */
export const AnyQuery = t.Object({}, { additionalProperties: true })
