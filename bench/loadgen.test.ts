import { afterAll, beforeEach, expect, test } from 'bun:test'
import type { LoadgenResult } from './loadgen'

/**
 * End to end: the generator's counts must equal what a real server answered, with bodies that
 * TCP splits (200 KB), chunked streamed bodies, empty 204s and error statuses, on keep-alive
 * connections. (Bun.serve drops a connection that pipelines behind a streamed response, so the
 * streamed case runs unpipelined.)
 */
let served: Record<string, number> = {}
beforeEach(() => {
  served = {}
})
const big = 'x'.repeat(200_000)
const server = Bun.serve({
  hostname: '127.0.0.1',
  port: 0,
  fetch(req) {
    const n = new URL(req.url).pathname.slice(1)
    const res =
      n === '0'
        ? new Response('ok')
        : n === '1'
          ? new Response(big)
          : n === '2'
            ? new Response(null, { status: 204 })
            : n === '3'
              ? new Response('not found', { status: 404 })
              : new Response(
                  new ReadableStream({
                    async pull(c) {
                      c.enqueue('part1,')
                      await Bun.sleep(1)
                      c.enqueue('part2')
                      c.close()
                    },
                  }),
                  { status: 201 },
                )
    served[res.status] = (served[res.status] ?? 0) + 1
    return res
  },
})
afterAll(() => server.stop(true))

async function loadgen(path: string, variants: number, pipeline: number): Promise<LoadgenResult> {
  const proc = Bun.spawn(
    [
      process.execPath,
      `${import.meta.dir}/loadgen.ts`,
      '--url',
      `http://127.0.0.1:${server.port}${path}`,
      '--variants',
      String(variants),
      '--seconds',
      '1',
      '--warmup',
      '0.2',
      '--connections',
      '8',
      '--pipeline',
      String(pipeline),
    ],
    { stdout: 'pipe', stderr: 'inherit' },
  )
  const r = JSON.parse(await new Response(proc.stdout).text()) as LoadgenResult
  expect(await proc.exited).toBe(0)
  return r
}

function expectExact(r: LoadgenResult) {
  expect(r.errorSamples).toEqual([])
  expect(r.protocolErrors + r.connectionErrors + r.unanswered).toBe(0)
  expect(r.received).toBe(r.sent)
  expect(r.received).toBeGreaterThan(100)
  expect(r.statuses).toEqual(served)
  expect(r.unexpected).toBe(r.received - (served[200] ?? 0))
}

test('pipelined: split large bodies, 204s and errors are counted exactly', async () => {
  expectExact(await loadgen('/{n}', 4, 4))
}, 20_000)

test('chunked streamed responses are counted exactly', async () => {
  expectExact(await loadgen('/4', 1, 1))
}, 20_000)
