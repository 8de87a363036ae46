import { join } from 'node:path'
import { COMET_ROUTES } from '../../src/api/realtime/comet'
import { ACCESS_TOKEN, basic, createTestGateway, ROOT_KEY } from './gateway'

/**
 * Every route a gateway serves, taken from the app itself: the Elysia app's routes (with the names
 * of their declared query parameters), the comet routes served before it, and the realtime root
 * (`/`, where WebSocket upgrades are taken; without one, Elysia answers). The native publish route
 * is one of the app's routes too (the same handler); over a real port Bun's router serves it.
 */
export interface WalkedRoute {
  method: string
  path: string
  query: string[]
}

export async function everyRoute(): Promise<WalkedRoute[]> {
  const gw = await createTestGateway()
  try {
    const routes = (gw.app.routes as Array<{ method: string; path: string; hooks?: any }>).map((r) => ({
      method: r.method,
      path: r.path,
      query: Object.keys(r.hooks?.query?.properties ?? {}),
    }))
    for (const [method, path] of COMET_ROUTES)
      for (const m of method === '*' ? ['GET', 'POST'] : [method]) routes.push({ method: m, path, query: [] })
    routes.push({ method: 'GET', path: '/', query: [] })
    return routes
  } finally {
    await gw.close()
  }
}

/** A truncated UTF-8 sequence: a malformed percent-encoding by every decoder. */
export const MALFORMED = '%E0%A4%A'

/** Query names tried on every route, beside those it declares (credentials are read from the query too). */
const ALWAYS = ['q', 'key', 'access_token', 'format']

/** Each URL (path and query) of `route` with one malformed percent-encoding: each path parameter, each query name and value. */
export function malformedUrls(route: WalkedRoute): string[] {
  const segments = route.path.split('/')
  const fill = (bad: number) =>
    segments.map((s, i) => (i === bad ? MALFORMED : s.startsWith(':') ? 'x' : s)).join('/') || '/'
  const urls: string[] = []
  segments.forEach((s, i) => {
    if (s.startsWith(':')) urls.push(fill(i))
  })
  const plain = fill(-1)
  for (const name of new Set([...ALWAYS, ...route.query])) urls.push(`${plain}?${name}=${MALFORMED}`)
  urls.push(`${plain}?${MALFORMED}=1`)
  return urls
}

/** What gives away the server's insides: a stack frame, a source path or line, the runtime's error page. */
const LEAKS = [
  /\n\s+at /,
  /\.ts:\d+/,
  /node_modules/,
  /\$bunfs/,
  /<html/i,
  new RegExp(join(import.meta.dir, '..', '..')),
]

/**
 * Sends every malformed URL of every route to `base`, with no credentials, with the root key and
 * with the management token; the problems found (each: the request and what was wrong with its
 * answer). Each answer must be a 4xx in the spec's error shape, with nothing of the server's insides.
 */
export async function walkMalformed(base: string, routes: WalkedRoute[]): Promise<string[]> {
  const problems: string[] = []
  const credentials: Array<Record<string, string>> = [
    {},
    { authorization: basic(ROOT_KEY) },
    { authorization: `Bearer ${ACCESS_TOKEN}` },
  ]
  for (const route of routes)
    for (const url of malformedUrls(route))
      for (const auth of credentials) {
        const what = `${route.method} ${url}${auth.authorization ? ` (${auth.authorization.split(' ')[0]})` : ''}`
        const withBody = route.method !== 'GET' && route.method !== 'DELETE'
        const r = await fetch(base + url, {
          method: route.method,
          headers: withBody ? { ...auth, 'content-type': 'application/json' } : auth,
          body: withBody ? '{}' : undefined,
        })
        const text = await r.text()
        const problem = checkAnswer(r, text)
        if (problem) problems.push(`${what}: ${problem}: ${r.status} ${text.slice(0, 200)}`)
      }
  return problems
}

function checkAnswer(r: Response, text: string): string | undefined {
  if (LEAKS.some((l) => l.test(text))) return 'leaks the server'
  if (r.status < 400 || r.status >= 500) return 'not a 4xx'
  if (r.headers.get('content-type') !== 'application/json') return `content-type ${r.headers.get('content-type')}`
  let body: { error?: { code?: number; statusCode?: number; message?: unknown } }
  try {
    body = JSON.parse(text)
  } catch {
    return 'not JSON'
  }
  if (
    typeof body.error?.code !== 'number' ||
    body.error.statusCode !== r.status ||
    typeof body.error.message !== 'string'
  )
    return 'not the error shape'
  if (r.headers.get('x-ably-errorcode') !== String(body.error.code)) return 'no X-Ably-ErrorCode'
  return undefined
}
