import type { Principal } from '../auth/principal'

/**
 * Rate-limit hook of the LiveObjects interface. The spec's limits are per account: state queries
 * (every read: namespaces, objects, history, subscriptions) 50 requests/s, state updates (PATCH and
 * DELETE) 2,000/s. Each call counts one operation and rejects (429 / 42910 with Retry-After) when
 * the account is over its limit (core/index.ts wires the account rate limiter in; `unlimited`
 * serves tests of the service alone).
 */
export interface ObjectLimits {
  stateQuery(p: Principal): void | Promise<void>
  stateUpdate(p: Principal): void | Promise<void>
}

export const unlimited: ObjectLimits = { stateQuery() {}, stateUpdate() {} }
