import { t, type TSchema } from 'elysia'
import { DEFAULT_PAGE_LIMIT } from './http/query'

/**
 * Building blocks of the response schemas the routes declare (`response:`). They document the
 * wire for the OpenAPI document and are never used to validate or coerce an answer: every route
 * returns a `Response` the codec wrote, and Elysia checks response schemas only against values
 * that are not a `Response` (Elysia's own compose.ts), so declaring them leaves the wire untouched.
 */

/** An object with the fields that are always there or matter; others may appear (the hosted service adds fields). */
export const Obj = <P extends Record<string, TSchema>>(properties: P, description?: string) =>
  t.Object(properties, { additionalProperties: true, ...(description ? { description } : {}) })

export const Opt = <S extends TSchema>(s: S) => t.Optional(s)
export const Str = (description?: string) => t.String(description ? { description } : {})
export const Int = (description?: string) => t.Integer(description ? { description } : {})
export const Ms = (description = 'ms since epoch') => t.Integer({ description })
export const Json = (description: string) => t.Any({ description })
export const Dict = (description?: string) => t.Record(t.String(), t.Any(), description ? { description } : {})

/** Every error of every interface (plugins/errors.ts writes them). */
export const ErrorBody = t.Object(
  {
    error: t.Object({
      code: t.Integer({ description: 'error code, e.g. 40160', examples: [40160] }),
      statusCode: t.Integer({ description: 'the HTTP status', examples: [403] }),
      message: t.String({ examples: ['Operation not permitted with provided capability'] }),
      href: t.Optional(t.String()),
    }),
  },
  { description: 'Error (also in the X-Ably-ErrorCode / X-Ably-ErrorMessage headers)' },
)

/** 204: no body. */
export const NoContent = t.Undefined({ description: 'No content' })

/** `{}`: an acknowledgement the client libraries parse (an empty body would not be). */
export const Empty = t.Object({}, { description: 'Acknowledged', additionalProperties: true })

/** Stats of an app or an account, one entry per interval. */
const StatsEntry = Obj({
  intervalId: Str('e.g. 2026-11-23:17:45'),
  unit: Str('minute | hour | day | month'),
  schema: Str(),
  appId: Opt(Str()),
  entries: t.Record(t.String(), t.Number(), { description: 'flattened counters, e.g. messages.all.all.count' }),
})
export const StatsList = t.Array(StatsEntry)

/**
 * Query parameters: their schemas (Elysia checks queries against them; the OpenAPI document shows
 * them). `http/query.ts` parses them.
 */

/** A string query parameter of at most `maxLength` characters. */
export const param = (description: string, maxLength = 256) => t.String({ description, maxLength })

/** Every field optional; unknown parameters (such as the browser client's `rnd`) are accepted and ignored. */
export const optionalQuery = (fields: Record<string, ReturnType<typeof t.String>>) =>
  t.Object(Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, t.Optional(v)])), {
    additionalProperties: true,
  })

export const LIMIT = param(`page size, default ${DEFAULT_PAGE_LIMIT}, max 1000`, 16)
export const CURSOR = param('page position, from a Link header', 2048)

export const HISTORY_FIELDS = {
  start: param('ms since epoch, inclusive', 32),
  end: param('ms since epoch, inclusive', 32),
  limit: LIMIT,
  direction: param('forwards | backwards (default)', 16),
  cursor: CURSOR,
}

export const HistoryParams = optionalQuery(HISTORY_FIELDS)

/** Any query (unknown parameters such as `rnd` are accepted and ignored). */
export const AnyQuery = t.Object({}, { additionalProperties: true })
