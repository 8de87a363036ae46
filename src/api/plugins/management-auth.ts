import { Elysia } from 'elysia'
import type { Core } from '../../core'

/**
 * `capability: 'read:app'` on a management route resolves `mp` (the access token's principal),
 * requires that capability ('' = any valid token) and charges the account's management budget.
 */
export const managementAuth = (core: Core) =>
  new Elysia({ name: 'management-auth', normalize: false }).macro({
    capability: (capability: string) => ({
      async resolve({ request }) {
        const mp = await core.management.authenticate(request.headers.get('authorization'))
        if (capability) core.management.require(mp, capability)
        await core.limits.take(mp.account.id, capability === 'read:stats' ? 'managementStats' : 'management')
        return { mp }
      },
    }),
  })
