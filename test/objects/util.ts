import { expect } from 'bun:test'
import { addKey as addTestKey, type TestGateway } from '../helpers/gateway'

/** Request helpers of the LiveObjects suites (paths are URL-encoded here). */
export const objPath = (ns: string, id?: string, tail = '') =>
  `/liveobjects/${encodeURIComponent(ns)}` + (id === undefined ? '' : `/objects/${encodeURIComponent(id)}`) + tail

export async function patch(gw: TestGateway, ns: string, id: string, body: unknown, key?: string) {
  return gw.request(objPath(ns, id), { method: 'PATCH', json: body, key })
}

/** PATCH that must succeed; returns the new state. */
export async function patchOk(gw: TestGateway, ns: string, id: string, data: unknown, version?: string): Promise<any> {
  const r = await patch(gw, ns, id, version === undefined ? { data } : { data, version })
  expect(r.status).toBe(200)
  return r.json()
}

export async function getJson(gw: TestGateway, path: string, key?: string): Promise<any> {
  const r = await gw.request(path, { key })
  expect(r.status).toBe(200)
  return r.json()
}

export { expectError } from '../helpers/errors'

/** The `next` link of a paginated response to `path`, resolved as a client does, or undefined. */
export function nextLink(r: Response, path: string): string | undefined {
  const m = /<([^>]+)>; rel="next"/.exec(r.headers.get('link') ?? '')
  if (!m) return undefined
  const u = new URL(m[1]!, 'http://localhost' + path)
  return u.pathname + u.search
}

/** Creates a key of the test app with `capability`; returns the key string. */
export const addKey = (gw: TestGateway, id: string, capability: Record<string, string[]>): Promise<string> =>
  addTestKey(gw, id, { capability })

/** These suites send bursts far above the per-account LiveObjects rate limits (tested elsewhere). */
export const NO_LIMITS = { rateLimits: false } as const
