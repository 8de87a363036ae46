import { t } from 'elysia'
import { Dict, Int, Ms, Obj, Opt, Str } from '../schemas'
import { AnyQuery, CURSOR, HistoryParams, LIMIT, optionalQuery, param } from '../schemas'

/** Schemas of the LiveObjects REST interface (validation + the OpenAPI document). */
const Q = optionalQuery

export const NamespaceListParams = Q({ limit: LIMIT, cursor: CURSOR })
export const ObjectListParams = Q({
  limit: LIMIT,
  prefix: param('only objects whose id starts with this', 512),
  cursor: CURSOR,
})
export { AnyQuery, HistoryParams }

export const NamespaceParam = t.Object({ namespace: t.String() })
export const ObjectParam = t.Object({ namespace: t.String(), object_id: t.String() })

export const PatchBody = t.Object(
  {
    data: t.Any({
      description:
        'object merged into the state (RFC 7396 JSON Merge Patch: nested objects merged, null removes a key, anything else replaces)',
    }),
    version: t.Optional(
      t.Union([t.String({ description: 'apply only if this is the current version (else 409)' }), t.Null()]),
    ),
  },
  { additionalProperties: true, examples: [{ data: { score: 3, players: { alice: null } } }] },
)

/* Responses (documented, never validated: see api/schemas.ts). */

export const NamespaceOut = Obj({ namespaceId: Str(), objectCount: Int(), lastActivity: Ms() })
export const ObjectOut = Obj({
  objectId: Str(),
  data: Dict('the state'),
  version: Str('opaque; send it back to update only this version'),
  timestamp: Ms('time of the last change'),
})
export const DeletedOut = Obj({ objectId: Str(), deleted: t.Boolean(), version: Str(), timestamp: Ms() })
export const ChangeOut = Obj({
  objectId: Str(),
  action: Str('update | delete'),
  version: Str(),
  timestamp: Ms(),
  patch: Opt(Dict('the merge patch as sent')),
  data: Opt(Dict('the state after the change')),
})
export const SubscriptionsOut = Obj({
  channel: Str('{namespace}::$objects:{id}'),
  subscriptions: t.Array(Obj({ connectionId: Str(), clientId: t.Union([t.String(), t.Null()]) })),
})
