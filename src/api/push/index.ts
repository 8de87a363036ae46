import { Elysia, t } from 'elysia'
import { NoContent } from '../schemas'
import type { Core } from '../../core'
import { deviceTokenOfBearer } from '../../core/push/access'
import type { DeviceState } from '../../core/push/ports'
import { GatewayError } from '../../errors'
import { credentialsOf } from '../http/credentials'
import { noContent, respond } from '../http/responses'
import { paginated, pageOf } from '../http/pagination'
import { intParam } from '../http/query'
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
        const creds = credentialsOf(request, query)
        let deviceToken = request.headers.get('x-ably-devicetoken') ?? undefined
        const h = creds.authorization
        if (h && h.slice(0, 7).toLowerCase() === 'bearer ') {
          const t = deviceTokenOfBearer(h.slice(7).trim())
          if (t !== undefined) {
            deviceToken ??= t
            creds.authorization = null
          }
        }
        const hasCreds = !!(creds.authorization || creds.key || creds.accessToken)
        const principal = hasCreds || deviceToken === undefined ? await core.auth.authenticate(creds) : undefined
        return { actor: await core.push.actor(principal, deviceToken, () => creds.secure()) }
      },
    },
  })

const devicesPage = paginated('deviceRegistrations', M.DeviceListQuery)
const subscriptionsPage = paginated('channelSubscriptions', M.SubscriptionListQuery)
const channelsPage = paginated('channels', M.ChannelListQuery)

/** The push admin interface of the channel REST API (`/push/...`), as the hosted service serves it. */
export const pushRoutes = (core: Core) => {
  const { devices, subscriptions, publisher } = core.push
  return new Elysia({ name: 'push', normalize: false })
    .use(pushAuth(core))
    .post(
      '/push/deviceRegistrations',
      async ({ request, query, body, actor }) =>
        respond(request, query, deviceView(await devices.save(actor, body)), { status: 201 }),
      {
        pushAuth: true,
        query: M.AnyQuery,
        body: M.DeviceBody,
        response: { 201: M.DeviceOut },
        detail: { summary: 'Register a device (push-admin, or push-subscribe for oneself)' },
      },
    )

    .put(
      '/push/deviceRegistrations/:deviceId',
      async ({ request, query, params, body, actor }) =>
        respond(request, query, deviceView(await devices.save(actor, body, params.deviceId))),
      {
        pushAuth: true,
        params: M.DeviceParam,
        query: M.AnyQuery,
        body: M.DeviceBody,
        response: { 200: M.DeviceOut },
        detail: { summary: 'Register or replace a device' },
      },
    )

    .patch(
      '/push/deviceRegistrations/:deviceId',
      async ({ request, query, params, body, actor }) =>
        respond(request, query, deviceView(await devices.update(actor, params.deviceId, body))),
      {
        pushAuth: true,
        params: M.DeviceParam,
        query: M.AnyQuery,
        body: M.DeviceBody,
        response: { 200: M.DeviceOut },
        detail: { summary: 'Update a device (clientId, metadata, push.recipient)' },
      },
    )

    .get(
      '/push/deviceRegistrations/:deviceId',
      async ({ request, query, params, actor }) =>
        respond(request, query, deviceView(await devices.get(actor, params.deviceId))),
      {
        pushAuth: true,
        params: M.DeviceParam,
        query: M.AnyQuery,
        response: { 200: M.DeviceOut },
        detail: { summary: 'A device registration' },
      },
    )

    .get(
      '/push/deviceRegistrations',
      async ({ request, query, actor }) => {
        const limit = intParam(query, 'limit', 100, 1, 1000)
        const state = opt(query.state)
        if (state !== undefined && !STATES.includes(state))
          throw new GatewayError(40003, 'Invalid state param: must be ACTIVE, FAILING or FAILED')
        const found = await devices.list(actor, {
          deviceId: opt(query.deviceId),
          clientId: opt(query.clientId),
          state: state as DeviceState | undefined,
          after: opt(query.cursor),
          limit: limit + 1,
        })
        return devicesPage(
          request,
          query,
          pageOf(found, limit, (d) => d.id),
          deviceView,
        )
      },
      {
        pushAuth: true,
        query: M.DeviceListQuery,
        response: { 200: t.Array(M.DeviceOut) },
        detail: { summary: 'List devices (paginated)' },
      },
    )

    .delete(
      '/push/deviceRegistrations/:deviceId',
      async ({ request, query, params, actor }) => {
        await devices.remove(actor, params.deviceId)
        return noContent(request, query)
      },
      {
        pushAuth: true,
        params: M.DeviceParam,
        query: M.AnyQuery,
        response: { 204: NoContent },
        detail: { summary: 'Remove a device and its subscriptions' },
      },
    )

    .delete(
      '/push/deviceRegistrations',
      async ({ request, query, actor }) => {
        await devices.removeWhere(actor, { deviceId: opt(query.deviceId), clientId: opt(query.clientId) })
        return noContent(request, query)
      },
      {
        pushAuth: true,
        query: M.DeviceRemoveQuery,
        response: { 204: NoContent },
        detail: { summary: 'Remove the devices matching deviceId / clientId' },
      },
    )

    .post(
      '/push/deviceRegistrations/:deviceId/resetUpdateToken',
      async ({ request, query, params, actor }) =>
        respond(request, query, deviceView(await devices.resetToken(actor, params.deviceId))),
      {
        pushAuth: true,
        params: M.DeviceParam,
        query: M.AnyQuery,
        response: { 200: M.DeviceOut },
        detail: { summary: 'Issue a new device identity token (the old one stops working)' },
      },
    )

    .post(
      '/push/channelSubscriptions',
      async ({ request, query, body, actor }) =>
        respond(request, query, await subscriptions.save(actor, body), { status: 201 }),
      {
        pushAuth: true,
        query: M.AnyQuery,
        body: M.SubscriptionBody,
        response: { 201: M.SubscriptionOut },
        detail: { summary: 'Subscribe a device or a clientId to a push-enabled channel' },
      },
    )

    .get(
      '/push/channelSubscriptions',
      async ({ request, query, actor }) => {
        const limit = intParam(query, 'limit', 100, 1, 1000)
        const found = await subscriptions.list(actor, {
          channel: opt(query.channel),
          deviceId: opt(query.deviceId),
          clientId: opt(query.clientId),
          concat: flag(query.concatFilters),
          after: parseSubscriptionCursor(opt(query.cursor)),
          limit: limit + 1,
        })
        return subscriptionsPage(request, query, pageOf(found, limit, subscriptionCursor))
      },
      {
        pushAuth: true,
        query: M.SubscriptionListQuery,
        response: { 200: t.Array(M.SubscriptionOut) },
        detail: { summary: 'List channel subscriptions (paginated)' },
      },
    )

    .delete(
      '/push/channelSubscriptions',
      async ({ request, query, actor }) => {
        await subscriptions.remove(actor, {
          channel: opt(query.channel),
          deviceId: opt(query.deviceId),
          clientId: opt(query.clientId),
        })
        return noContent(request, query)
      },
      {
        pushAuth: true,
        query: M.SubscriptionRemoveQuery,
        response: { 204: NoContent },
        detail: { summary: 'Remove the channel subscriptions matching channel / deviceId / clientId' },
      },
    )

    .get(
      '/push/channels',
      async ({ request, query, actor }) => {
        const limit = intParam(query, 'limit', 100, 1, 1000)
        const channels = await subscriptions.channels(actor, opt(query.cursor), limit + 1)
        return channelsPage(
          request,
          query,
          pageOf(channels, limit, (c) => c),
        )
      },
      {
        pushAuth: true,
        query: M.ChannelListQuery,
        response: { 200: t.Array(t.String()) },
        detail: { summary: 'Channels with push subscriptions (paginated; push-admin)' },
      },
    )

    .post(
      '/push/publish',
      async ({ request, query, body, actor }) => {
        const results = await publisher.publish(actor, body, flag(query.fullWait))
        return respond(request, query, results ? { results } : {}, { status: 201 })
      },
      {
        pushAuth: true,
        query: M.PublishQuery,
        body: M.PublishBody,
        response: { 201: M.PublishOut },
        detail: { summary: 'Send a notification to a deviceId, a clientId or a raw recipient (push-admin)' },
      },
    )

    .post(
      '/push/batch/publish',
      async ({ request, query, body, actor }) => {
        return respond(request, query, await publisher.batch(actor, body, flag(query.fullWait)), { status: 201 })
      },
      {
        pushAuth: true,
        query: M.PublishQuery,
        body: M.BatchBody,
        response: { 201: M.BatchOut },
        detail: { summary: 'Send several notifications, each {recipient, payload} (push-admin)' },
      },
    )
}
