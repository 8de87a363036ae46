import { t } from 'elysia'
import { MAX_CAPABILITY_RESOURCES } from '../../core/auth/capability'
import {
  MAX_CONFLATION_KEY_LENGTH,
  MAX_LIMIT_OVERRIDE,
  MAX_NAME_LENGTH,
  MAX_NAMESPACE_INTERVAL_MS,
  MIN_LIMIT_OVERRIDE,
} from '../../core/control/management'
import { Dict, Int, Ms, Obj, Opt, Str } from '../schemas'

/** A display name (account, app, key). */
const Name = (description?: string) => t.String({ maxLength: MAX_NAME_LENGTH, ...(description ? { description } : {}) })
/** An id: 1-64 letters, digits, `_` or `-` (the core checks the characters). */
const Id = (description: string) =>
  t.String({ maxLength: 64, description: `${description}; 1-64 letters, digits, _ or -` })

/** Schemas of the management interface (validation + OpenAPI); values are checked again by the core. */
export const AppBody = t.Object(
  {
    name: t.Optional(Name('display name (required on create)')),
    status: t.Optional(t.String({ description: 'enabled | disabled' })),
    tlsOnly: t.Optional(t.Boolean()),
  },
  { additionalProperties: true, examples: [{ name: 'my-app', status: 'enabled', tlsOnly: false }] },
)

export const KeyBody = t.Object(
  {
    name: t.Optional(Name()),
    capability: t.Optional(
      t.Record(t.String(), t.Array(t.String()), {
        maxProperties: MAX_CAPABILITY_RESOURCES,
        description: `resource -> operations (required on create); at most ${MAX_CAPABILITY_RESOURCES} resources, each a channel name or pattern of up to 1024 characters`,
      }),
    ),
    revocableTokens: t.Optional(t.Boolean()),
  },
  {
    additionalProperties: true,
    examples: [{ name: 'subscriber', capability: { 'news:*': ['subscribe', 'history'] } }],
  },
)

export const NamespaceBody = t.Object(
  {
    id: t.Optional(Id('namespace name (required on create)')),
    persisted: t.Optional(t.Boolean()),
    pushEnabled: t.Optional(t.Boolean()),
    mutableMessages: t.Optional(t.Boolean()),
    batchingInterval: t.Optional(t.Integer({ minimum: 0, maximum: MAX_NAMESPACE_INTERVAL_MS, description: 'ms' })),
    conflationInterval: t.Optional(t.Integer({ minimum: 0, maximum: MAX_NAMESPACE_INTERVAL_MS, description: 'ms' })),
    conflationKey: t.Optional(t.String({ maxLength: MAX_CONFLATION_KEY_LENGTH })),
  },
  { additionalProperties: true, examples: [{ id: 'news', persisted: true }] },
)

export const StatsQuery = t.Object(
  {
    unit: t.Optional(t.String({ description: 'minute | hour (default) | day | month' })),
    limit: t.Optional(t.String()),
    start: t.Optional(t.String()),
    end: t.Optional(t.String()),
    direction: t.Optional(t.String()),
    cursor: t.Optional(t.String()),
  },
  { additionalProperties: true },
)

export const AccountParam = t.Object({ accountId: t.String() })
export const AppParam = t.Object({ appId: t.String() })
export const KeyParam = t.Object({ appId: t.String(), keyId: t.String() })
export const NamespaceParam = t.Object({ appId: t.String(), namespaceId: t.String() })

export const LimitsBody = t.Record(t.String(), t.Union([t.Number(), t.Null()]), {
  description: `limit class (messages, history, tokenRequests, objectReads, objectWrites: per second; management, managementStats: per minute) -> rate from ${MIN_LIMIT_OVERRIDE} to ${MAX_LIMIT_OVERRIDE}, or null for the default`,
})

export const AccountBody = t.Object(
  {
    name: Name('display name'),
    id: t.Optional(Id('account id (random when absent)')),
  },
  { additionalProperties: true },
)

/* Responses (documented, never validated: see api/schemas.ts). */

const Timestamps = { created: Ms(), modified: Ms() }

export const AppOut = Obj({
  accountId: Str(),
  id: Str(),
  name: Str(),
  status: Str('enabled | disabled'),
  tlsOnly: t.Boolean(),
  ...Timestamps,
  _links: Obj({ self: Str() }),
})

export const KeyOut = Obj({
  appId: Str(),
  id: Str(),
  name: Str(),
  status: Int('0 enabled, 1 revoked'),
  key: Str('appId.keyId, with :secret only in the answer to its creation'),
  capability: t.Record(t.String(), t.Array(t.String())),
  revocableTokens: t.Boolean(),
  ...Timestamps,
})

export const NamespaceOut = Obj({
  id: Str(),
  appId: Str(),
  persisted: t.Boolean(),
  pushEnabled: t.Boolean(),
  mutableMessages: t.Boolean(),
  created: Opt(Ms()),
  modified: Opt(Ms()),
})

export const MeOut = Obj({
  token: Obj({ id: Str(), name: Str(), capabilities: t.Array(t.String()) }),
  user: Obj({ id: Int(), email: Str() }),
  account: Obj({ id: Str(), name: Str() }),
})

export const AccountOut = Obj({ id: Str(), name: Str(), created: Ms() })
export const AccountCreated = Obj({
  account: AccountOut,
  accessToken: Str('the new account’s management access token: shown only here'),
})

export const LimitsOut = t.Record(
  t.String({ description: 'limit class' }),
  Obj({
    unit: Str('per second | per minute'),
    default: t.Number(),
    override: t.Union([t.Number(), t.Null()]),
    effective: t.Number(),
  }),
  { description: 'every limit class with its default, override and effective rate' },
)

export const RuleOut = Obj({
  id: Str(),
  appId: Str(),
  ruleType: Str('http | amqp'),
  requestMode: Str('single | batch'),
  status: Str('enabled | disabled'),
  source: Obj({ channelFilter: Str(), type: Str() }),
  target: Obj({}),
  version: Str(),
  ...Timestamps,
  _links: Obj({ self: Str() }),
})

export const QueueOut = Obj({
  id: Str(),
  appId: Str(),
  name: Str(),
  region: Str(),
  ttl: Int('minutes'),
  maxLength: Int(),
  state: Str(),
  messages: Obj({ ready: Int(), unacknowledged: Int(), total: Int() }),
})

export const QueuedMessages = t.Array(
  Obj({
    deliveryTag: Str('acknowledge with this'),
    channel: Str(),
    message: Dict('the channel message (or envelope)'),
    enqueued: Ms(),
    redelivered: Int('times handed out before without an acknowledgement'),
  }),
)

export const Acknowledged = Obj({ acknowledged: Int('messages removed') })

export const SandboxApp = Obj({
  appId: Str(),
  accountId: Str(),
  keys: t.Array(Obj({ keyName: Str(), keySecret: Str(), keyStr: Str(), capability: Str() })),
  namespaces: t.Array(Dict()),
})
export const StatsLoaded = Obj({ loaded: Int('records loaded') })
export { StatsList } from '../schemas'
