/**
 * The REST side of the in-process benches (publish-route-cost.ts, publish-allocations.ts): a
 * node's native publish route (`publishRoute`) called directly, and the publish `bench/run.ts
 * publish` sends with wrk (Basic auth, a 100-byte JSON message, 100 channels).
 */
import { join } from 'node:path'
import { BENCH_KEY } from './targets'
import { inProcessNode } from './in-process-node'

export type Route = (req: Request, server: unknown) => Promise<Response>

/** The publish route of a node of the checkout at `root` (`env` over its settings). */
export async function restRoute(root: string, rateLimits = false, env: Record<string, string> = {}): Promise<Route> {
  const { publishHandler, publishRoute } = await import(join(root, 'src/api/channels/publish-endpoint.ts'))
  const { CorsPolicy } = await import(join(root, 'src/api/http/cors.ts'))
  const { config, node } = await inProcessNode(root, rateLimits, env)
  return publishRoute(publishHandler(node.core, config, node.log), new CorsPolicy([]), node.log)
}

const body = JSON.stringify({ name: 'bench', data: 'x'.repeat(74) })
const headers = {
  authorization: 'Basic ' + Buffer.from(BENCH_KEY).toString('base64'),
  'content-type': 'application/json',
  accept: 'application/json',
  'x-ably-version': '6',
  'ably-agent': 'ably-js/2.28.0 bench',
  'content-length': String(body.length),
}
let n = 0
/** The next publish request (the next of 100 channels). */
export const publishRequest = (): Request =>
  new Request(`http://127.0.0.1:8080/channels/bench-${n++ % 100}/messages`, { method: 'POST', headers, body })

const server = { requestIP: () => null }

/** Sends `requests` through `route`, `inflight` at a time as the server sees them; throws unless every one is answered 201. */
export async function publishAll(route: Route, requests: Request[], inflight = 50): Promise<void> {
  for (let i = 0; i < requests.length; i += inflight) {
    const answers = await Promise.all(requests.slice(i, i + inflight).map((r) => route(r, server)))
    const bad = answers.find((a) => a.status !== 201)
    if (bad) throw new Error(`status ${bad.status}: ${await bad.text()}`)
  }
}
