import type { Server } from 'bun'
import { GatewayError } from '../../errors'
import { respondError } from './responses'
import { NO_QUERY } from './query'

/**
 * The requests one TCP connection may make per second, on the HTTP/2 listener. There a client
 * multiplexes any number of streams over one connection, and Bun hands every stream to the
 * handler, reset or not: a rapid-reset flood (HEADERS then RST_STREAM, over and over) made it
 * call a bare handler 66,537 times before its own GOAWAY, and the gateway's routes did the work of
 * each, holding `/health` for seconds. Past the bound a request is answered 429 / 42910 at once,
 * before credentials or routing. A connection is told apart by its peer address and port; a
 * window is one second, and windows not touched for a second are forgotten once a second.
 */
export function connectionRate<S>(perSecond: number) {
  const windows = new Map<string, { start: number; n: number }>()
  let pruned = performance.now()
  return (req: Request, server: Server<S>): Response | undefined => {
    const ip = server.requestIP(req)
    if (!ip) return undefined
    const now = performance.now()
    if (now - pruned > 1000) {
      for (const [k, w] of windows) if (now - w.start > 1000) windows.delete(k)
      pruned = now
    }
    const key = `${ip.address}|${ip.port}`
    let w = windows.get(key)
    if (!w || now - w.start > 1000) windows.set(key, (w = { start: now, n: 0 }))
    if (++w.n <= perSecond) return undefined
    return respondError(
      req,
      NO_QUERY,
      new GatewayError(42910, `More than ${perSecond} requests per second on one connection`),
    )
  }
}
