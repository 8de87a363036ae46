import { isLongLived } from './long-lived'

/**
 * The body size of a response the codec wrote, for access logs: Bun does not expose what it sends,
 * so the codec notes what it knows (a symbol property: measured free, where a WeakMap entry cost
 * ~180 ns per response): the size, or the text itself, measured only when a line is written.
 */
const BYTES = Symbol('bytes')

type Noted = Response & { [BYTES]?: number | string }

export function sized(res: Response, body: number | string): Response {
  ;(res as Noted)[BYTES] = body
  return res
}

/** The noted size, else a Content-Length header; undefined for streams and unknown bodies. */
export function bytesOf(res: Response): number | undefined {
  const n = (res as Noted)[BYTES]
  if (n !== undefined) return typeof n === 'string' ? Buffer.byteLength(n) : n
  // a stream has no size; reading its headers would make a Headers object it keeps for its life
  if (isLongLived(res)) return undefined
  const h = res.headers.get('content-length')
  return h === null ? undefined : Number(h)
}
