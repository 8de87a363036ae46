import { expect } from 'bun:test'
import { pack } from 'msgpackr'
import { join } from 'node:path'
import { ACCESS_TOKEN, APP_ID, ROOT_KEY, basic } from '../helpers/gateway'
import { GatewayNode } from '../helpers/node-process'
import { backendEnvFor } from '../helpers/redis-cluster'

/**
 * The hostile-input suites: a gateway in a process of its own (so a stall of its event loop shows
 * in its own /health answers, not in the test runner's), on the backend of the run.
 */
export const ACCOUNT_ID = 'hostileacct'
export const MAX_BODY = 2 * 1024 * 1024

export async function hostileNode(env: Record<string, string> = {}): Promise<GatewayNode> {
  const redis = await backendEnvFor(`hostile:${Math.random().toString(36).slice(2)}:`)
  return GatewayNode.start({
    BOOTSTRAP_ACCESS_TOKEN: ACCESS_TOKEN,
    BOOTSTRAP_ACCOUNT_ID: ACCOUNT_ID,
    LOG_LEVEL: 'silent',
    ...redis,
    ...env,
  })
}

export const KEY_AUTH = { authorization: basic(ROOT_KEY) }
export const BEARER_AUTH = { authorization: `Bearer ${ACCESS_TOKEN}` }
export { APP_ID, ROOT_KEY }

/** Asserts the spec's error shape with one of `codes` (JSON, exact content type, X-Ably-ErrorCode). */
export async function expectShape(r: Response, status: number, codes: number[], what: string) {
  const text = await r.text()
  expect(`${what}: ${r.status} ${text.slice(0, 300)}`).toStartWith(`${what}: ${status} `)
  expect(r.headers.get('content-type')).toBe('application/json')
  const body = JSON.parse(text)
  if (!codes.includes(body.error?.code))
    throw new Error(`${what}: code ${body.error?.code}, expected ${codes}: ${text}`)
  expect(body.error.statusCode).toBe(status)
  expect(typeof body.error.message).toBe('string')
  expect(r.headers.get('x-ably-errorcode')).toBe(String(body.error.code))
  return body.error
}

/**
 * The bound on one `/health` answer while hostile requests are served: a stall, not a figure. A
 * request that blocks the gateway's event loop (a parse gone quadratic, a catastrophic pattern)
 * holds it for seconds; a busy machine delays an answer by tens or hundreds of milliseconds, and
 * must not fail a test (how fast `/health` answers under load is a figure for `bench/`).
 */
export const STALL_MS = 2000

/**
 * Polls `/health` one request at a time until stopped; reports the slowest answer. A stall of the
 * gateway's event loop (a request that blocks it) shows up as one slow answer.
 */
/**
 * Polls `/health` from a process of its own (test/helpers/health-watcher.ts) until `stop()`, which
 * gives the slowest answer (ms) and how many came: a stall is the gateway's alone, never the time
 * the test's own process spent building an attack.
 */
export function watchHealth(base: string) {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, '../helpers/health-watcher.ts'), base], {
    stdin: 'pipe',
    stdout: 'pipe',
    stderr: 'inherit',
  })
  return {
    async stop(): Promise<{ slowest: number; answers: number }> {
      proc.stdin.end()
      const out = await new Response(proc.stdout).text()
      await proc.exited
      const r = JSON.parse(out) as { slowest: number; answers: number; failure?: string }
      if (r.failure) throw new Error(r.failure)
      return { slowest: r.slowest, answers: r.answers }
    },
  }
}

/** `{"x": [[[...]]]}` nested `levels` deep, as JSON text and as msgpack bytes. */
export function deepBodies(levels: number) {
  const json = `{"x":${'['.repeat(levels)}${']'.repeat(levels)}}`
  const mp = new Uint8Array(levels + 3)
  mp.set([0x81, 0xa1, 0x78]) // {"x": ...
  mp.fill(0x91, 3, levels + 2) // [ ... (one element each)
  mp[levels + 2] = 0x90 // the innermost: []
  return { json, msgpack: mp }
}

export const packed = (v: unknown) => new Uint8Array(pack(v))
