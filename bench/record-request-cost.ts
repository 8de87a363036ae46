/**
 * In-process cost of `recordRequest` (request metrics + the access line) per request, as the
 * native publish route calls it: `bun bench/record-request-cost.ts > /dev/null` (lines go to stdout;
 * the figures to stderr). Also measures `server.requestIP` on a real loopback request.
 */
import { clientAddress, recordRequest } from '../src/api/http/access-log'
import { sized } from '../src/api/http/response-bytes'
import { createLogger } from '../src/lib/logger'

const N = 300_000
// a fresh request each time (request ids are kept per request), made before the clock starts
const requests = Array.from(
  { length: N },
  () => new Request('http://localhost/channels/c/messages', { method: 'POST' }),
)
const res = sized(new Response('{"channel":"c","messageId":"a:0","serials":["x"]}', { status: 201 }), 48)
const party = { appId: 'app1', accountId: 'acc1' }
const route = '/channels/:channel/messages'

async function loop(label: string, level: 'silent' | 'info') {
  const log = createLogger(level)
  const address = () => '127.0.0.1'
  for (let i = 0; i < 50_000; i++) recordRequest(log, requests[i]!, route, 201, performance.now(), res, party, address)
  for (const r of requests) delete (r as unknown as Record<symbol, unknown>)[Object.getOwnPropertySymbols(r)[0]!]
  await Bun.sleep(10)
  const t0 = performance.now()
  for (let i = 0; i < N; i++) {
    recordRequest(log, requests[i]!, route, 201, performance.now(), res, party, address)
    if (i % 1000 === 999) await new Promise((r) => setImmediate(r)) // let the per-turn flush run, as a server does
  }
  const t1 = performance.now()
  const base = performance.now()
  for (let i = 0; i < N; i++) if (i % 1000 === 999) await new Promise((r) => setImmediate(r))
  const loopOnly = performance.now() - base
  process.stderr.write(`${label}: ${(((t1 - t0 - loopOnly) * 1e6) / N).toFixed(0)} ns per request\n`)
}

await loop('metrics only (LOG_LEVEL=warn or silent)', 'silent')
await loop('metrics + access line (LOG_LEVEL=info)', 'info')

const server = Bun.serve({
  port: 0,
  hostname: '127.0.0.1',
  fetch(r, s) {
    for (let i = 0; i < 10_000; i++) clientAddress(s, r)
    const t0 = performance.now()
    for (let i = 0; i < 100_000; i++) clientAddress(s, r)
    return new Response(String(((performance.now() - t0) * 1e6) / 100_000))
  },
})
const ns = await (await fetch(`http://127.0.0.1:${server.port}/`)).text()
process.stderr.write(`client address (server.requestIP): ${Number(ns).toFixed(0)} ns per request\n`)
server.stop(true)
