import { Elysia, t } from 'elysia'
import type { Core } from '../../core'
import type { Principal } from '../../core/auth/principal'
import { randomId } from '../../lib/crypto'
import { toBase64 } from '../../lib/encoding'
import { authPlugin } from '../plugins/auth'
import { binaryAllowed, negotiate, respond } from '../http/responses'
import { AnyQuery, optionalQuery, param } from '../schemas'
import { Obj, Str } from '../schemas'

/** A value for a JSON answer: binary leaves as base64 (msgpack carries them as they are). */
function base64Bytes(v: unknown): unknown {
  if (v instanceof Uint8Array) return toBase64(v)
  if (Array.isArray(v)) return v.map(base64Bytes)
  if (typeof v === 'object' && v !== null) {
    const out: Record<string, unknown> = {}
    for (const [k, x] of Object.entries(v)) out[k] = base64Bytes(x)
    return out
  }
  return v
}

const ChannelParam = t.Object({ channel: t.String() })
const ObjectParam = t.Object({ channel: t.String(), objectId: t.String() })
const ReadQuery = optionalQuery({
  path: param('dot-separated path from root (or from the object), `\\.` escapes a dot', 4096),
  compact: param('false: the full form with object ids and types (default true)', 5),
  objectId: param('ignored (the official client repeats the path segment here)', 512),
})
const Operations = t.Union(
  [t.Array(t.Object({}, { additionalProperties: true })), t.Object({}, { additionalProperties: true })],
  {
    description:
      'one operation or an array of them (applied all or none): objectId or path, and one of mapSet, mapRemove, counterInc, mapCreate, counterCreate, mapCreateWithObjectId, counterCreateWithObjectId; optional id (idempotency)',
  },
)
const ReadOut = (description: string) =>
  t.Union([t.Record(t.String(), t.Unknown()), t.Number(), t.String(), t.Boolean()], { description })
const PublishOut = Obj({ messageId: Str(), channel: Str(), objectIds: t.Array(t.String()) })

/** What the two publish paths declare (the same route under both). */
const publishRoute = (summary: string) => ({
  auth: true as const,
  params: ChannelParam,
  query: AnyQuery,
  body: Operations,
  response: { 200: PublishOut },
  detail: { summary },
})

/**
 * The LiveObjects REST API the official client's plugin calls (`channel.object` on `Ably.Rest`):
 * `GET /channels/{channel}/object[/{objectId}]` and `POST /channels/{channel}/object`, with
 * `POST .../objects` as an alias (the client's own test fixtures seed through it).
 */
export const channelObjectRoutes = (core: Core) => {
  const read = (
    request: Request,
    query: Record<string, string | undefined>,
    principal: Principal,
    channel: string,
    objectId?: string,
  ) =>
    core.liveObjectsRest
      .read(principal, channel, { objectId, path: query.path, compact: query.compact !== 'false' })
      .then((v) => respond(request, query, binaryAllowed(negotiate(request, query)) ? v : base64Bytes(v)))
  const publish = async (
    request: Request,
    query: Record<string, string | undefined>,
    principal: Principal,
    channel: string,
    body: unknown,
  ) => respond(request, query, await core.liveObjectsRest.publish(principal, channel, body, randomId(10)))
  return new Elysia({ name: 'channel-objects', normalize: false })
    .use(authPlugin(core))
    .get(
      '/channels/:channel/object',
      ({ request, query, params, principal }) => read(request, query, principal, params.channel),
      {
        auth: true,
        params: ChannelParam,
        query: ReadQuery,
        response: { 200: ReadOut('the tree from root, compact or full (compact=false); a leaf at path is its value') },
        detail: { summary: "The channel's LiveObjects from root (ably-js RestObject.get)" },
      },
    )
    .get(
      '/channels/:channel/object/:objectId',
      ({ request, query, params, principal }) => read(request, query, principal, params.channel, params.objectId),
      {
        auth: true,
        params: ObjectParam,
        query: ReadQuery,
        response: { 200: ReadOut('the object (or the value at path from it)') },
        detail: { summary: 'One LiveObject by id (ably-js RestObject.get({objectId}))' },
      },
    )
    .post(
      '/channels/:channel/object',
      ({ request, query, params, principal, body }) => publish(request, query, principal, params.channel, body),
      publishRoute('Publish LiveObjects operations (ably-js RestObject.publish)'),
    )
    .post(
      '/channels/:channel/objects',
      ({ request, query, params, principal, body }) => publish(request, query, principal, params.channel, body),
      publishRoute('Publish LiveObjects operations (alias of /object)'),
    )
}
