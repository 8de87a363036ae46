/**
 * Responses that stay open for as long as their client does (event streams). The server exempts
 * their connections from the idle timeout; everything else is a request that ends. A response is
 * known by its body: the framework may rebuild the Response around it (to merge headers).
 */
const longLived = new WeakSet<object>()

export function markLongLived(res: Response): Response {
  if (res.body) longLived.add(res.body)
  return res
}

export const isLongLived = (res: Response): boolean => res.body !== null && longLived.has(res.body)
