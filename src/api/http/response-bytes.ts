import { isLongLived } from './long-lived'

/**
 * The body size of a response the codec wrote, for access logs: Bun does not expose what it sends,
 * so the codec notes the size it knows (a symbol property: measured free, where a WeakMap entry
 * cost ~180 ns per response).
 */
const BYTES = Symbol('bytes')

export function sized(res: Response, bytes: number): Response {
  ;(res as Response & { [BYTES]?: number })[BYTES] = bytes
  return res
}

/** The noted size, else a Content-Length header; undefined for streams and unknown bodies. */
export function bytesOf(res: Response): number | undefined {
  const n = (res as Response & { [BYTES]?: number })[BYTES]
  if (n !== undefined) return n
  // a stream has no size; reading its headers would make a Headers object it keeps for its life
  if (isLongLived(res)) return undefined
  const h = res.headers.get('content-length')
  return h === null ? undefined : Number(h)
}
