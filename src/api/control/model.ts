import { t } from 'elysia'

/** Schemas of the management interface (validation + OpenAPI); values are checked again by the core. */
export const AppBody = t.Object({
  name: t.Optional(t.String({ description: 'display name (required on create)' })),
  status: t.Optional(t.String({ description: 'enabled | disabled' })),
  tlsOnly: t.Optional(t.Boolean()),
}, { additionalProperties: true })

export const KeyBody = t.Object({
  name: t.Optional(t.String()),
  capability: t.Optional(t.Record(t.String(), t.Array(t.String()), { description: 'resource -> operations (required on create)' })),
  revocableTokens: t.Optional(t.Boolean()),
}, { additionalProperties: true })

export const NamespaceBody = t.Object({
  id: t.Optional(t.String({ description: 'namespace name (required on create)' })),
  persisted: t.Optional(t.Boolean()),
  pushEnabled: t.Optional(t.Boolean()),
  mutableMessages: t.Optional(t.Boolean()),
}, { additionalProperties: true })

export const StatsQuery = t.Object({
  unit: t.Optional(t.String({ description: 'minute | hour (default) | day | month' })),
  limit: t.Optional(t.String()), start: t.Optional(t.String()), end: t.Optional(t.String()),
  direction: t.Optional(t.String()), cursor: t.Optional(t.String()),
}, { additionalProperties: true })

export const AccountParam = t.Object({ accountId: t.String() })
export const AppParam = t.Object({ appId: t.String() })
export const KeyParam = t.Object({ appId: t.String(), keyId: t.String() })
export const NamespaceParam = t.Object({ appId: t.String(), namespaceId: t.String() })

export const LimitsBody = t.Record(t.String(), t.Union([t.Number(), t.Null()]), {
  description: 'limit class (messages, history, tokenRequests, objectReads, objectWrites: per second; management, managementStats: per minute) -> rate, or null for the default',
})

export const AccountBody = t.Object({
  name: t.String({ description: 'display name' }),
  id: t.Optional(t.String({ description: 'account id (random when absent)' })),
}, { additionalProperties: true })
