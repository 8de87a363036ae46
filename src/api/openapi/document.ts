import { toOpenAPISchema } from '@elysiajs/openapi'
import type { AnyElysia } from 'elysia'
import { interfaceOf } from '../http/access-log'
import { ErrorBody } from '../schemas'

/**
 * The OpenAPI document of the whole server, generated from the routes: paths, parameters, request
 * bodies and responses come from the very schemas the routes declare (`params`, `query`, `body`,
 * `response`), so they cannot drift apart. This module adds what routes do not say one by one:
 * the tag of each interface, its security schemes, the formats every REST route speaks and the
 * error shape they all share.
 */

type Operation = {
  tags?: string[]
  security?: Array<Record<string, string[]>>
  requestBody?: { required?: boolean; content: Record<string, { schema: Schema; example?: unknown }> }
  responses?: Record<string, { description: string; content?: Record<string, { schema: Schema }> } | { $ref: string }>
  [k: string]: unknown
}
type Schema = { examples?: unknown[]; [k: string]: unknown }
const OPTIONAL = Symbol.for('TypeBox.Optional')

const TAGS: Array<{ name: string; description: string }> = [
  { name: 'channels', description: 'Channel REST: publish, history, presence, channel metadata, batch, stats, tokens' },
  { name: 'event-stream', description: 'Read-only delivery over Server-Sent Events (key or accessToken in the query)' },
  {
    name: 'management',
    description: 'Management (/v1): accounts, apps, keys, namespaces, queues, rules, stats, limits',
  },
  {
    name: 'chat',
    description: 'Chat rooms: messages, reactions, typing, occupancy (spec paths and the hosted v4 paths)',
  },
  { name: 'liveobjects', description: 'Shared JSON objects: read, merge (RFC 7396), delete, history' },
  { name: 'push', description: 'Push notification admin: devices, channel subscriptions, publish' },
  { name: 'sandbox', description: 'Throwaway apps for test suites (SANDBOX_PROVISIONING=true)' },
  { name: 'ops', description: 'Health, readiness and Prometheus metrics' },
]

const SECURITY_SCHEMES = {
  basicAuth: {
    type: 'http',
    scheme: 'basic',
    description: 'API key: user name `appId.keyId`, password the key secret',
  },
  bearerToken: { type: 'http', scheme: 'bearer', description: 'A token from requestToken, or a JWT (raw or base64)' },
  managementToken: { type: 'http', scheme: 'bearer', description: 'Management access token (/v1 only)' },
  keyQuery: { type: 'apiKey', in: 'query', name: 'key', description: 'API key in the query (event stream)' },
  accessTokenQuery: { type: 'apiKey', in: 'query', name: 'accessToken', description: 'Token in the query' },
}

const REST: Array<Record<string, string[]>> = [{ basicAuth: [] }, { bearerToken: [] }]
const SECURITY: Record<string, Operation['security']> = {
  channels: REST,
  chat: REST,
  liveobjects: REST,
  push: REST,
  sandbox: REST,
  'event-stream': [{ keyQuery: [] }, { accessTokenQuery: [] }, ...REST],
  management: [{ managementToken: [] }],
  ops: [],
}
/** Operations whose credentials differ from their interface's. */
const SECURITY_OF: Record<string, Operation['security']> = {
  'get /time': [],
  'post /apps': [],
  'post /keys/{keyName}/requestToken': [{ basicAuth: [] }, {}], // a signed TokenRequest needs none
}

/** Formats every REST route reads and writes (JSON, msgpack; form-urlencoded in too). */
const BODY_TYPES = ['application/json', 'application/x-msgpack', 'application/x-www-form-urlencoded']
const ANSWER_TYPES = ['application/json', 'application/x-msgpack']

export function buildDocument(app: AnyElysia, info: { title: string; version: string; description: string }) {
  const { paths, components } = toOpenAPISchema(app) as {
    paths: Record<string, Record<string, Operation>>
    components: { schemas?: Record<string, unknown> }
  }
  // request bodies: the generator leaves their content empty when a custom parser is set (ours,
  // for msgpack and form bodies), so they are taken from the routes' `body` schemas here
  const bodies = new Map<string, Schema>()
  for (const r of app.routes) {
    const body = (r.hooks as { body?: Schema } | undefined)?.body
    if (body) bodies.set(`${r.method.toLowerCase()} ${r.path.replace(/:(\w+)/g, '{$1}')}`, body)
  }
  for (const [path, ops] of Object.entries(paths)) {
    const iface = interfaceOf(path.replace(/\{(\w+)\}/g, ':$1'))
    for (const [method, op] of Object.entries(ops)) {
      const key = `${method} ${path}`
      finishOperation(op, iface, key, bodies.get(key))
    }
  }
  return {
    openapi: '3.1.0',
    info,
    tags: TAGS,
    paths,
    components: {
      ...components,
      securitySchemes: SECURITY_SCHEMES,
      responses: {
        Error: {
          description: 'Error',
          content: Object.fromEntries(ANSWER_TYPES.map((t) => [t, { schema: ErrorBody }])),
        },
      },
    },
  }
}

function finishOperation(op: Operation, iface: string, key: string, body: Schema | undefined) {
  op.tags = [iface]
  op.security = SECURITY_OF[key] ?? SECURITY[iface] ?? []
  const rest = iface !== 'ops' && iface !== 'event-stream'
  if (body) {
    const example = body.examples?.length ? { example: body.examples[0] } : {}
    op.requestBody = {
      ...op.requestBody,
      required: (body as Record<symbol, unknown>)[OPTIONAL] !== 'Optional',
      content: Object.fromEntries(BODY_TYPES.map((t) => [t, { schema: body, ...example }])),
    }
  }
  for (const [status, response] of Object.entries(op.responses ?? {})) {
    if ('$ref' in response) continue
    const schema = Object.values(response.content ?? {})[0]?.schema
    if (status === '204' || !schema || !('type' in schema || 'anyOf' in schema || '$ref' in schema)) {
      delete response.content
      response.description = status === '204' ? 'No content' : response.description
    } else if (iface === 'event-stream') response.content = { 'text/event-stream': { schema } }
    else if (rest) response.content = Object.fromEntries(ANSWER_TYPES.map((t) => [t, { schema }]))
  }
  if (iface !== 'ops') {
    op.responses ??= {}
    op.responses['4XX'] = { $ref: '#/components/responses/Error' }
    op.responses['5XX'] = { $ref: '#/components/responses/Error' }
  }
}
