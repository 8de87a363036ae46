import type { Server } from 'bun'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { issuingNodeOf } from '../../core/connections'
import type { Logger } from '../../lib/logger'

/**
 * Comet requests between the processes of one node (WORKERS, or processes sharing the port with
 * REUSE_PORT). The kernel picks a process per TCP connection, and a comet client makes each
 * request on whatever connection its HTTP stack has, so a `send` or `recv` often reaches another
 * process than the one holding its connection (whose transport, queue and long poll live in
 * that process's memory). Each process listens on a unix socket in SIBLING_SOCKET_DIR named after
 * its node id, which every connection key names (`connection-keys.ts`): a request for a key this
 * process does not hold is passed, as it came (method, headers, body streamed), to the socket of
 * the node the key names, and its answer streamed back. The owner applies every bound (the send
 * body's size and deadline, one poll at a time). Requests that arrive on a socket are never passed
 * on again. A node that is gone (no socket, refused, or no answer in time) is answered as before:
 * DISCONNECTED 80003, and the client resumes.
 */
export interface CometHandover {
  /** The owner's answer to a request of connection `key`; undefined when the key names this process or no node. */
  forward(key: string, request: Request): Promise<Response> | undefined
  close(): void
}

/** Characters of a request URL before its path (`http://host`), found once per request. */
const pathAndQuery = (url: string) => url.slice(url.indexOf('/', url.indexOf('//') + 2))

export function cometHandover(
  dir: string,
  self: string,
  /** How long a passed request may take to be answered (a long poll included) before the owner counts as gone (ms). */
  answerWithinMs: number,
  /** Serves a request that arrived on this process's socket (comet only; never passed on). */
  serveLocal: (request: Request, server: Server<undefined>) => Response | Promise<Response>,
  gone: () => Response,
  log: Logger,
): CometHandover {
  const socketOf = (node: string) => join(dir, `${node}.sock`)
  const own = socketOf(self)
  let server: Server<undefined> | undefined
  try {
    server = Bun.serve({ unix: own, fetch: serveLocal })
  } catch (e) {
    log.warn('comet hand-over socket not opened: comet requests reaching this process are not passed on', {
      socket: own,
      error: e instanceof Error ? e.message : String(e),
    })
  }

  return {
    forward(key, request) {
      const node = issuingNodeOf(key)
      if (!node || node === self) return undefined
      return fetch(`http://sibling${pathAndQuery(request.url)}`, {
        unix: socketOf(node),
        method: request.method,
        headers: request.headers,
        body: request.body,
        signal: AbortSignal.any([request.signal, AbortSignal.timeout(answerWithinMs)]),
        redirect: 'manual',
        decompress: false,
      } as RequestInit).then(
        (r) => new Response(r.body, { status: r.status, headers: r.headers }),
        () => gone(),
      )
    },
    close() {
      if (!server) return
      void server.stop(true)
      server = undefined
      rmSync(own, { force: true })
    },
  }
}
