import { t } from 'elysia'
import { Dict, Int, Ms, Obj, Opt as O, Str as S } from '../schemas'
import { AnyQuery, CURSOR, LIMIT, optionalQuery, param } from '../schemas'

/**
 * Schemas of the push admin interface (validation + the OpenAPI document). Fields whose values
 * the core checks (platform, formFactor, transportType, ...) are typed loosely here so the
 * answer names what is allowed; msgpack clients send null for unset fields, so null is accepted.
 */
const Str = (description?: string) => t.Optional(t.Union([t.String(description ? { description } : {}), t.Null()]))
const Any = (description: string) => t.Optional(t.Any({ description }))

export const Recipient = t.Object(
  {
    transportType: Str('apns | fcm | gcm | web | ablyChannel'),
    deviceToken: Str('apns'),
    registrationToken: Str('fcm, gcm'),
    targetUrl: Str('web'),
    channel: Str('ablyChannel: channel the notifications are published on'),
    deviceId: Str('publish only: a registered device'),
    clientId: Str('publish only: every device of a client'),
  },
  { additionalProperties: true },
)

export const DeviceBody = t.Object(
  {
    id: Str('device id (required on POST; the path names it on PUT)'),
    clientId: Str(),
    platform: Any('ios | android | browser (anything else is 400 / 40000)'),
    formFactor: Str('phone | tablet | desktop | tv | watch | car | embedded | other'),
    metadata: Any('object'),
    deviceSecret: Str(),
    push: t.Optional(
      t.Union([
        t.Object({ recipient: t.Optional(t.Union([Recipient, t.Null()])) }, { additionalProperties: true }),
        t.Null(),
      ]),
    ),
  },
  { additionalProperties: true },
)

export const SubscriptionBody = t.Object(
  {
    channel: Str('a channel of a namespace with pushEnabled'),
    deviceId: Str('exactly one of deviceId and clientId'),
    clientId: Str(),
  },
  { additionalProperties: true },
)

export const PublishBody = t.Object(
  {
    recipient: t.Optional(t.Union([Recipient, t.Null()])),
    notification: Any('{title, body, ...}'),
    data: Any('key-value pairs'),
    apns: Any('APNs overrides'),
    fcm: Any('FCM overrides'),
    web: Any('web push overrides'),
  },
  { additionalProperties: true },
)

export const BatchItem = t.Object(
  { recipient: t.Optional(t.Any()), payload: t.Optional(t.Any()) },
  { additionalProperties: true },
)
export const BatchBody = t.Union([t.Array(BatchItem), BatchItem])

/** Optional string parameters by description (bounded like the ids they carry), limit and cursor as everywhere. */
const Q = (fields: Record<string, string>) =>
  optionalQuery(
    Object.fromEntries(
      Object.entries(fields).map(([k, d]) => [k, k === 'limit' ? LIMIT : k === 'cursor' ? CURSOR : param(d, 1024)]),
    ),
  )

export const DeviceListQuery = Q({
  deviceId: 'only this device',
  clientId: 'only devices of this client',
  state: 'ACTIVE | FAILING | FAILED',
  limit: 'page size, default 100, max 1000',
  cursor: 'page position, from a Link header',
})
export const DeviceRemoveQuery = Q({
  deviceId: 'this device',
  clientId: 'every device of this client',
  fullWait: 'ignored (always synchronous)',
})
export const SubscriptionListQuery = Q({
  channel: 'only this channel',
  deviceId: 'only this device',
  clientId: 'only this client',
  concatFilters: 'true: deviceId OR clientId',
  limit: 'page size, default 100, max 1000',
  cursor: 'page position, from a Link header',
})
export const SubscriptionRemoveQuery = Q({
  channel: 'this channel',
  deviceId: 'this device',
  clientId: 'this client',
  fullWait: 'ignored (always synchronous)',
})
export const ChannelListQuery = Q({
  limit: 'page size, default 100, max 1000',
  cursor: 'page position, from a Link header',
})
export const PublishQuery = Q({ fullWait: "true: answer after delivery, with each delivery's outcome" })
export { AnyQuery }
export const DeviceParam = t.Object({ deviceId: t.String() })

/* Responses (documented, never validated: see api/schemas.ts). */

export const DeviceOut = Obj({
  id: S(),
  clientId: O(S()),
  platform: S('ios | android | browser'),
  formFactor: S(),
  metadata: Dict(),
  deviceSecret: O(S()),
  push: Obj({ recipient: Dict(), state: S('ACTIVE | FAILING | FAILED'), error: O(Dict()) }),
  deviceIdentityToken: Obj({ token: S('send as X-Ably-DeviceToken'), issued: Ms() }),
})
export const SubscriptionOut = Obj({ channel: S(), deviceId: O(S()), clientId: O(S()) })
const Delivery = Obj({}, 'one delivery: {ok} or {error}')
export const PublishOut = Obj({ results: O(t.Array(Delivery, { description: 'with fullWait=true' })) })
export const BatchOut = Obj({
  successCount: Int(),
  failureCount: Int(),
  results: t.Array(Obj({ recipient: t.Any(), results: O(t.Array(Delivery)), error: O(Dict()) })),
})
