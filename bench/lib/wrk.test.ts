import { afterAll, describe, expect, test } from 'bun:test'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { requireSystem } from '../../test/helpers/system'
import { runWrk, wrkPath } from './wrk'

/**
 * The wrk driver against a real server: every byte of a binary body (all 256 values, as msgpack
 * bodies hold) arrives unchanged, the URL variants rotate, headers arrive, and what wrk counts
 * is what the server answered (errors included).
 */
const available = requireSystem(wrkPath() ?? '/usr/bin/wrk', 'wrk')
const dir = mkdtempSync(join(tmpdir(), 'wrk-test-'))
const bodies = new Map<string, number>()
const paths = new Set<string>()
let answered = 0
let refused = 0
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  async fetch(req) {
    const url = new URL(req.url)
    paths.add(url.pathname)
    const body = Buffer.from(await req.arrayBuffer()).toString('hex')
    bodies.set(body, (bodies.get(body) ?? 0) + 1)
    if (req.headers.get('x-test') !== 'yes "quoted" \\ value' || url.pathname === '/c/3') {
      refused++
      return new Response('no', { status: 400 })
    }
    answered++
    return new Response('ok', { status: 201 })
  },
})
afterAll(() => {
  server.stop(true)
  rmSync(dir, { recursive: true, force: true })
})

describe.skipIf(!available)('wrk driver', () => {
  test('binary bodies arrive unchanged, variants rotate, and the counts are the server answers', async () => {
    const bytes = new Uint8Array(256).map((_, i) => i)
    const r = await runWrk({
      url: `http://127.0.0.1:${server.port}/c/{n}`,
      variants: 4,
      method: 'POST',
      headers: ['X-Test: yes "quoted" \\ value', 'Content-Type: application/x-msgpack'],
      body: bytes,
      seconds: 1,
      warmup: 0,
      connections: 4,
      dir,
    })
    expect([...bodies.keys()]).toEqual([Buffer.from(bytes).toString('hex')])
    expect([...paths].sort()).toEqual(['/c/0', '/c/1', '/c/2', '/c/3'])
    // wrk stops with requests in flight: the server may have answered a few more than it counted
    expect(r.responses).toBeGreaterThan(100)
    expect(answered + refused - r.responses).toBeLessThanOrEqual(4)
    expect(Math.abs(r.unexpected - refused)).toBeLessThanOrEqual(4)
    expect(r.unexpected).toBeGreaterThan(0)
    expect(r.connectionErrors).toBe(0)
  })
})
