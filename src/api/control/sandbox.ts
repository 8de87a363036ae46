import { Elysia, t } from 'elysia'
import type { Core } from '../../core'
import { GatewayError } from '../../errors'
import { authPlugin } from '../plugins/auth'
import { noContent, respond } from '../http/responses'
import { NoContent } from '../schemas'
import * as M from './model'

/**
 * Where clients reach this server, as the request that provisioned the app reached it: test
 * harnesses pass `endpoint`, `port` and `tls` to their clients (ably-js treats an endpoint with a
 * `.` or `::`, or `localhost`, as a host name). TLS is the request's own or a proxy's
 * `X-Forwarded-Proto: https`.
 */
function whereThisServerIs(request: Request): { endpoint: string; port: number; tls: boolean } {
  const url = new URL(request.url)
  const tls = url.protocol === 'https:' || request.headers.get('x-forwarded-proto') === 'https'
  return { endpoint: url.hostname, port: url.port ? Number(url.port) : tls ? 443 : 80, tls }
}

/**
 * Sandbox provisioning (off unless SANDBOX_PROVISIONING=true): `POST /apps` creates a throwaway
 * app without credentials, `DELETE /apps/{appId}` removes it with one of its keys, `POST /stats`
 * loads stats records into it.
 */
export const sandboxRoutes = (core: Core, enabled: boolean) => {
  const guard = () => {
    if (!enabled) throw new GatewayError(40400, 'Sandbox provisioning is disabled (SANDBOX_PROVISIONING=false)')
  }
  return new Elysia({ name: 'sandbox', normalize: false })
    .use(authPlugin(core))
    .post(
      '/apps',
      async ({ request, query, body }) => {
        guard()
        const app = await core.sandbox.provision((body ?? {}) as Record<string, unknown>)
        return respond(request, query, { ...app, ...whereThisServerIs(request) }, { status: 201 })
      },
      {
        body: t.Optional(
          t.Object(
            {
              keys: t.Optional(
                t.Array(
                  t.Object(
                    { capability: t.Optional(t.String({ description: 'JSON capability string' })) },
                    { additionalProperties: true },
                  ),
                ),
              ),
              namespaces: t.Optional(t.Array(t.Object({ id: t.String() }, { additionalProperties: true }))),
              channels: t.Optional(
                t.Array(
                  t.Object(
                    {
                      name: t.String(),
                      presence: t.Optional(t.Array(t.Object({ clientId: t.String() }, { additionalProperties: true }))),
                    },
                    { additionalProperties: true },
                  ),
                ),
              ),
            },
            { additionalProperties: true },
          ),
        ),
        response: { 201: M.SandboxApp },
        detail: { summary: 'Sandbox: create a throwaway app with keys, namespaces and present members' },
      },
    )
    .delete(
      '/apps/:appId',
      async ({ request, params, principal }) => {
        guard()
        await core.sandbox.remove(principal, params.appId)
        return noContent(request)
      },
      {
        auth: true,
        params: t.Object({ appId: t.String() }),
        response: { 204: NoContent },
        detail: { summary: 'Sandbox: delete an app with one of its keys' },
      },
    )
    .post(
      '/stats',
      async ({ request, query, body, principal }) => {
        guard()
        return respond(request, query, { loaded: core.sandbox.loadStats(principal, body) }, { status: 201 })
      },
      {
        auth: true,
        body: t.Array(t.Record(t.String(), t.Any())),
        response: { 201: M.StatsLoaded },
        detail: { summary: 'Sandbox: load stats records (nested legacy form)' },
      },
    )
}
