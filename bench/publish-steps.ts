/**
 * Where the REST publish's server CPU goes at the socket level: the gateway's steps added one at
 * a time to the bare `text()` route, each stage a route of one in-process server over a real
 * port, loaded by wrk in rounds run forwards and backwards in turn (so that a drift of the
 * machine's speed, or an effect of a run's place in its round, falls on every stage alike):
 * `bun bench/publish-steps.ts [--seconds 4] [--rounds 5] [--connections 50]`.
 * Stages (each does what the one before did, then more, and answers as the bare route does):
 *
 *   text      JSON.parse(await req.text()), 201 (the bare route of `bench/run.ts publish`)
 *   read      + the URL, query, channel, headers, credentials (cached), stats
 *   body      + the body by the gateway's rules (declared length, deadline, nesting, numbers)
 *   prepare   + the core's validation and drafts (`Publisher.prepare`)
 *   publish   + the core's publish (ring append, rules, push, stats, metrics)
 *   gateway   the native publish route itself (+ the answer, CORS and the access line)
 *   node      the same route served by the node's own server (`node.listen`: its settings,
 *             its other routes and its fallback to the app), on a port of its own
 *
 * The process runs with the gateway's allocator settings (it begins itself again for them, as
 * src/main.ts does): with Bun's defaults a stage that allocates more would pay page faults the
 * gateway does not (docs/performance.md, the allocator's purge delay).
 * Reports the server's CPU per request of each stage (median of the rounds) and what it adds to
 * the stage before. Embedded node, rate limits off, LOG_LEVEL=warn (as `bench/run.ts publish`).
 * The stages share the gateway's functions in one process (one JIT), so read the steps, not the
 * digits: they move by up to ~1 us between sets on this machine. Asserts only that every request is
 * answered 201.
 */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { parseFlags } from './lib/args'
import { inProcessNode, removeNodeDirs } from './lib/in-process-node'
import { BENCH_KEY } from './lib/targets'
import { runWrk } from './lib/wrk'
import { created } from './lib/bare-answer'
import { publishHandler, publishRoute, PUBLISH_ROUTE } from '../src/api/channels/publish-endpoint'
import { CorsPolicy } from '../src/api/http/cors'
import { queryOfUrl } from '../src/api/http/query'
import { checkQueryEncoding, pathParam } from '../src/api/http/params'
import { credentialsOf } from '../src/api/http/credentials'
import { decodeReceived, mediaType, receiveBody, structured } from '../src/api/http/body'
import { beginWithGatewayAllocator } from './lib/gateway-allocator'

beginWithGatewayAllocator()

const f = parseFlags(process.argv.slice(2), { seconds: 'number', rounds: 'number', connections: 'number' })
const STAGES = ['text', 'read', 'body', 'prepare', 'publish', 'gateway', 'node'] as const

const { config, node } = await inProcessNode(resolve(import.meta.dir, '..'), false)
const core = node.core
const channelOf = pathParam(PUBLISH_ROUTE, 'channel')
/** The route of stage `level` (an index of STAGES below `gateway`). */
const stage =
  (level: number) =>
  async (req: Request): Promise<Response> => {
    if (level === 0) return created('bare', (JSON.parse(await req.text()) as { name?: string }).name)
    const url = req.url
    const query = queryOfUrl(url)
    const channel = channelOf(url)!
    checkQueryEncoding(url)
    const headers = req.headers
    const length = headers.get('content-length')
    const creds = credentialsOf(req, query)
    const p = core.auth.cached(creds) ?? (await core.auth.authenticate(creds))
    core.stats.apiRequest(p.appId, p.accountId)
    let body: unknown
    if (level < 2) body = JSON.parse(await req.text())
    else {
      const type = mediaType(headers.get('content-type') ?? '')
      body = structured(decodeReceived(await receiveBody(req, type, config, length), type, config))
    }
    if (level < 3) return created(channel, (body as { name?: string }).name)
    if (level < 4) return created(channel, core.publisher.prepare(p, channel, body).messageId)
    const answer = core.publisher.publish(p, channel, body)
    return created(channel, (answer instanceof Promise ? await answer : answer).serials[0])
  }

const gateway = publishRoute(publishHandler(core, config, node.log), new CorsPolicy([]), node.log)
const routes: Record<string, { POST: (req: Request, server: any) => Response | Promise<Response> }> = {}
STAGES.forEach((name, i) => {
  if (name !== 'node') routes[`/${name}/channels/:channel/messages`] = { POST: name === 'gateway' ? gateway : stage(i) }
})
const nodeServer = node.listen({ port: 0, hostname: '127.0.0.1' })
const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  idleTimeout: 0,
  routes,
  fetch: () => new Response(null, { status: 404 }),
})

const dir = mkdtempSync(join(tmpdir(), 'publish-steps-'))
const spec = (name: string, seconds: number, warmup: number) => ({
  url:
    name === 'node'
      ? `http://127.0.0.1:${nodeServer.port}/channels/bench-{n}/messages`
      : `http://127.0.0.1:${server.port}/${name}/channels/bench-{n}/messages`,
  variants: 100,
  method: 'POST',
  headers: [
    `Authorization: Basic ${Buffer.from(BENCH_KEY).toString('base64')}`,
    'Content-Type: application/json',
    'Accept: application/json',
    'X-Ably-Version: 6',
  ],
  body: JSON.stringify({ name: 'bench', data: 'x'.repeat(74) }),
  seconds,
  warmup,
  connections: f.connections ?? 50,
  serverPids: [process.pid],
  label: name,
  dir,
})

const perRequest: Record<string, number[]> = {}
for (const name of STAGES) await runWrk(spec(name, 1, 0)) // every stage's code compiled before any is measured
// forwards, then backwards, and so on: an effect of a run's place in the round falls on every stage alike
for (let round = 0; round < (f.rounds ?? 5); round++)
  for (const name of round % 2 ? [...STAGES].reverse() : STAGES) {
    const r = await runWrk(spec(name, f.seconds ?? 4, 0))
    if (r.unexpected || r.connectionErrors) throw new Error(`${name}: ${r.unexpected} answers not 201`)
    ;(perRequest[name] ??= []).push((((r.serverCpuPercent ?? NaN) / 100) * r.seconds * 1e6) / r.responses)
  }
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!
let before: number | undefined
for (const name of STAGES) {
  const m = median(perRequest[name]!)
  const added = before === undefined ? '' : `  (${m - before >= 0 ? '+' : ''}${(m - before).toFixed(2)})`
  console.log(
    `${name.padEnd(8)} ${m.toFixed(2)} us of server CPU per request${added}   rounds: ${perRequest[name]!.map((x) => x.toFixed(1)).join(' ')}`,
  )
  before = m
}
server.stop(true)
nodeServer.stop(true)
removeNodeDirs()
process.exit(0)
