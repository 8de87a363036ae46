import { respond } from './responses'
import { DEFAULT_PAGE_LIMIT, type Q } from './query'

/** One page of a collection: its items and, when there is a next page, the cursor of its position. */
export interface Page<T = unknown> {
  items: T[]
  next?: string
}

/**
 * The page of a `limit + 1` query: the first `limit` items, and the `next` cursor (the page's last
 * position) when one more item showed there is a next page.
 */
export function pageOf<T>(items: T[], limit: number, position: (item: T) => string): Page<T> {
  const page = items.slice(0, limit)
  return { items: page, next: items.length > limit ? position(page[page.length - 1]!) : undefined }
}

/**
 * Pagination links in the only form the client libraries follow: `./<segment>?<query>`, commas
 * percent-encoded (ably-wire.md §1.3). They carry only the parameters that define the page, the
 * ones `pageParams` names: never credentials, the browser client's `rnd` or anything else a
 * request brought (a 16 KB query once made a 32 KB header that fetch could not read).
 * `next` is present only when there is a next page.
 */
export function pageLinks(segment: string, pageParams: readonly string[], q: Q, next?: string): Record<string, string> {
  const base: Record<string, string> = {}
  for (const k of pageParams) {
    const v = q[k]
    if (v !== undefined) base[k] = v
  }
  // a link with an empty query is dropped by the client (`first()` / `current()` then fail with
  // 40400): the page size every paginated route defaults to is written out when none was asked
  if (pageParams.includes('limit') && !base.limit) base.limit = String(DEFAULT_PAGE_LIMIT)
  const url = (cursor: string | undefined) =>
    `./${segment}?${new URLSearchParams(cursor === undefined ? base : { ...base, cursor }).toString()}`
  const links: Record<string, string> = { first: url(undefined), current: url(q.cursor || undefined) }
  if (next !== undefined) links.next = url(next)
  return links
}

/**
 * The response tail of a paginated route whose query is `schema`: the page's items in the
 * negotiated format with `Link` headers (`./<segment>?...`) carrying the parameters the schema
 * declares, the cursor excepted (it is the page position). `map` turns an item into its wire form.
 */
export function paginated(segment: string, schema: { properties: Record<string, unknown> }) {
  const pageParams = Object.keys(schema.properties).filter((k) => k !== 'cursor')
  return <T>(request: Request, query: Q, page: Page<T>, map?: (item: T) => unknown): Response =>
    respond(request, query, map ? page.items.map(map) : page.items, {
      links: pageLinks(segment, pageParams, query, page.next),
    })
}
