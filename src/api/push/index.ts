import { Elysia } from 'elysia'
import type { Core } from '../../core'
import { deviceTokenOfBearer } from '../../core/push/access'
import type { DeviceState } from '../../core/push/ports'
import { GatewayError } from '../../errors'
import { credentialsOf } from '../plugins/auth'
import { noContent, respond, type Query } from '../plugins/codec'
import { intParam, pageLinks, pageOf } from '../params'
import * as M from './model'
import { deviceView, parseSubscriptionCursor, subscriptionCursor } from './wire'

const STATES = ['ACTIVE', 'FAILING', 'FAILED']
const opt = (v: string | undefined) => (v === undefined || v === '' ? undefined : v)
const flag = (v: string | undefined) => v === 'true' || v === '1'

/**
 * `pushAuth: true` resolves `actor`: the request's credentials, the device identity token
 * (`X-Ably-DeviceToken`, or a Bearer token that is one), or both.
 */
const pushAuth = (core: Core) =>
  new Elysia({ name: 'push-auth', normalize: false }).macro({
    pushAuth: {
      async resolve({ request, query }) {
        const creds = credentialsOf(request, query as Query)
        let deviceToken = request.headers.get('x-ably-devicetoken') ?? undefined
        const h = creds.authorization
        if (h && h.slice(0, 7).toLowerCase() === 'bearer ') {
          const t = deviceTokenOfBearer(h.slice(7).trim())
          if (t !== undefined) { deviceToken ??= t; creds.authorization = null }
        }
        const hasCreds = !!(creds.authorization || creds.key || creds.accessToken)
        const principal = hasCreds || deviceToken === undefined ? await core.auth.authenticate(creds) : undefined
        return { actor: await core.push.actor(principal, deviceToken, creds.secure) }
      },
    },
  })

/** The push admin interface of the channel REST API (`/push/...`), as the hosted service serves it. */
export const pushRoutes = (core: Core) => {
  const { devices, subscriptions, publisher } = core.push
  return new Elysia({ name: 'push', normalize: false })
    .use(pushAuth(core))
    .post('/push/deviceRegistrations', async ({ request, query, body, actor }) =>
      respond(request, query as Query, deviceView(await devices.save(actor, body)), { status: 201 }),
    { pushAuth: true, query: M.AnyQuery, body: M.DeviceBody, detail: { summary: 'Register a device (push-admin, or push-subscribe for oneself)' } })

    .put('/push/deviceRegistrations/:deviceId', async ({ request, query, params, body, actor }) =>
      respond(request, query as Query, deviceView(await devices.save(actor, body, params.deviceId))),
    { pushAuth: true, params: M.DeviceParam, query: M.AnyQuery, body: M.DeviceBody, detail: { summary: 'Register or replace a device' } })

    .patch('/push/deviceRegistrations/:deviceId', async ({ request, query, params, body, actor }) =>
      respond(request, query as Query, deviceView(await devices.update(actor, params.deviceId, body))),
    { pushAuth: true, params: M.DeviceParam, query: M.AnyQuery, body: M.DeviceBody, detail: { summary: 'Update a device (clientId, metadata, push.recipient)' } })

    .get('/push/deviceRegistrations/:deviceId', async ({ request, query, params, actor }) =>
      respond(request, query as Query, deviceView(await devices.get(actor, params.deviceId))),
    { pushAuth: true, params: M.DeviceParam, query: M.AnyQuery, detail: { summary: 'A device registration' } })

    .get('/push/deviceRegistrations', async ({ request, query, actor }) => {
      const q = query as Query
      const limit = intParam(q, 'limit', 100, 1, 1000)
      const state = opt(q.state)
      if (state !== undefined && !STATES.includes(state)) throw new GatewayError(40003, 'Invalid state param: must be ACTIVE, FAILING or FAILED')
      const found = await devices.list(actor, {
        deviceId: opt(q.deviceId), clientId: opt(q.clientId), state: state as DeviceState | undefined, after: opt(q.cursor), limit: limit + 1,
      })
      const { page, next } = pageOf(found, limit, (d) => d.id)
      return respond(request, q, page.map(deviceView), { links: pageLinks('deviceRegistrations', q, next) })
    }, { pushAuth: true, query: M.DeviceListQuery, detail: { summary: 'List devices (paginated)' } })

    .delete('/push/deviceRegistrations/:deviceId', async ({ request, query, params, actor }) => {
      await devices.remove(actor, params.deviceId)
      return noContent(request, query as Query)
    }, { pushAuth: true, params: M.DeviceParam, query: M.AnyQuery, detail: { summary: 'Remove a device and its subscriptions' } })

    .delete('/push/deviceRegistrations', async ({ request, query, actor }) => {
      const q = query as Query
      await devices.removeWhere(actor, { deviceId: opt(q.deviceId), clientId: opt(q.clientId) })
      return noContent(request, query as Query)
    }, { pushAuth: true, query: M.DeviceRemoveQuery, detail: { summary: 'Remove the devices matching deviceId / clientId' } })

    .post('/push/deviceRegistrations/:deviceId/resetUpdateToken', async ({ request, query, params, actor }) =>
      respond(request, query as Query, deviceView(await devices.resetToken(actor, params.deviceId))),
    { pushAuth: true, params: M.DeviceParam, query: M.AnyQuery, detail: { summary: 'Issue a new device identity token (the old one stops working)' } })

    .post('/push/channelSubscriptions', async ({ request, query, body, actor }) =>
      respond(request, query as Query, await subscriptions.save(actor, body), { status: 201 }),
    { pushAuth: true, query: M.AnyQuery, body: M.SubscriptionBody, detail: { summary: 'Subscribe a device or a clientId to a push-enabled channel' } })

    .get('/push/channelSubscriptions', async ({ request, query, actor }) => {
      const q = query as Query
      const limit = intParam(q, 'limit', 100, 1, 1000)
      const found = await subscriptions.list(actor, {
        channel: opt(q.channel), deviceId: opt(q.deviceId), clientId: opt(q.clientId), concat: flag(q.concatFilters),
        after: parseSubscriptionCursor(opt(q.cursor)), limit: limit + 1,
      })
      const { page, next } = pageOf(found, limit, subscriptionCursor)
      return respond(request, q, page, { links: pageLinks('channelSubscriptions', q, next) })
    }, { pushAuth: true, query: M.SubscriptionListQuery, detail: { summary: 'List channel subscriptions (paginated)' } })

    .delete('/push/channelSubscriptions', async ({ request, query, actor }) => {
      const q = query as Query
      await subscriptions.remove(actor, { channel: opt(q.channel), deviceId: opt(q.deviceId), clientId: opt(q.clientId) })
      return noContent(request, query as Query)
    }, { pushAuth: true, query: M.SubscriptionRemoveQuery, detail: { summary: 'Remove the channel subscriptions matching channel / deviceId / clientId' } })

    .get('/push/channels', async ({ request, query, actor }) => {
      const q = query as Query
      const limit = intParam(q, 'limit', 100, 1, 1000)
      const { page, next } = pageOf(await subscriptions.channels(actor, opt(q.cursor), limit + 1), limit, (c) => c)
      return respond(request, q, page, { links: pageLinks('channels', q, next) })
    }, { pushAuth: true, query: M.ChannelListQuery, detail: { summary: 'Channels with push subscriptions (paginated; push-admin)' } })

    .post('/push/publish', async ({ request, query, body, actor }) => {
      const q = query as Query
      const results = await publisher.publish(actor, body, flag(q.fullWait))
      return respond(request, q, results ? { results } : {}, { status: 201 })
    }, { pushAuth: true, query: M.PublishQuery, body: M.PublishBody, detail: { summary: 'Send a notification to a deviceId, a clientId or a raw recipient (push-admin)' } })

    .post('/push/batch/publish', async ({ request, query, body, actor }) => {
      const q = query as Query
      return respond(request, q, await publisher.batch(actor, body, flag(q.fullWait)), { status: 201 })
    }, { pushAuth: true, query: M.PublishQuery, body: M.BatchBody, detail: { summary: 'Send several notifications, each {recipient, payload} (push-admin)' } })
}
