import { Elysia } from 'elysia'
import type { Core } from '../../core'
import { credentialsOf } from '../http/credentials'

/** `auth: true` on a route resolves `principal` (Basic, token or JWT) or fails with 401. */
export const authPlugin = (core: Core) =>
  new Elysia({ name: 'auth', normalize: false }).macro({
    auth: {
      async resolve({ request, query }) {
        const principal = await core.auth.authenticate(credentialsOf(request, query))
        core.stats.apiRequest(principal.appId, principal.accountId)
        return { principal }
      },
    },
  })
