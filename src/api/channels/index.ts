import { Elysia, t } from 'elysia'
import type { Core } from '../../core'
import { GatewayError } from '../../errors'
import { authPlugin } from '../plugins/auth'
import { credentialsOf } from '../http/credentials'
import { binaryAllowed, negotiate, respond } from '../http/responses'
import { PUBLISH_ROUTE, type PublishEndpoint } from './publish-endpoint'
import { paginated, pageOf } from '../http/pagination'
import { historyQuery, intParam, statsQuery, untilSerial } from '../http/query'
import { messageRoutes } from './message-routes'
import { annotationRoutes } from './annotation-routes'
import * as M from './model'
import { batchPublishToWire } from '../wire/batch-publish'
import { messageToWire } from '../wire/message'
import { presenceToWire } from '../wire/presence'
import { memberPosition } from '../../core/presence/presence-service'
import { protocolVersion } from '../http/protocol-version'

const historyPage = paginated('messages', M.MessageHistoryParams)
const presencePage = paginated('presence', M.PresenceParams)
const presenceHistoryPage = paginated('history', M.HistoryParams)
const channelsPage = paginated('channels', M.ChannelListParams)
const statsPage = paginated('stats', M.StatsParams)

/**
 * The channel REST interface (base `{base_url}`). Routes destructure the request and call the
 * core; publishing is `publish` (publish-endpoint.ts), the very function Bun's router calls.
 */
export const channelRoutes = (core: Core, publish: PublishEndpoint) =>
  new Elysia({ name: 'channels', normalize: false })
    .use(authPlugin(core))
    .post(
      PUBLISH_ROUTE,
      // the parse hook leaves this route's body unread (OWN_BODY): the handler reads it, with the
      // credentials, as for every publish; `body` documents what it reads
      ({ request }) => publish.handle(request),
      {
        params: M.ChannelParam,
        query: M.AnyQuery,
        body: M.PublishBody,
        response: { 201: M.PublishResult },
        detail: { summary: 'Publish one or more messages' },
      },
    )

    .get(
      '/channels/:channel/messages',
      async ({ request, query, params, principal }) => {
        const hq = untilSerial(historyQuery(query), query.from_serial)
        const history = await core.annotations.withSummaries(
          principal.appId,
          params.channel,
          await core.channels.history(principal, params.channel, { ...hq, limit: hq.limit + 1 }),
        )
        const bin = binaryAllowed(negotiate(request, query))
        return historyPage(
          request,
          query,
          pageOf(history, hq.limit, (m) => m.serial),
          (m) => messageToWire(m, bin),
        )
      },
      {
        auth: true,
        params: M.ChannelParam,
        query: M.MessageHistoryParams,
        response: { 200: t.Array(M.MessageOut) },
        detail: { summary: 'Message history (paginated)' },
      },
    )

    .get(
      '/channels/:channel/presence',
      async ({ request, query, params, principal }) => {
        const limit = intParam(query, 'limit', 100, 1, 1000)
        const members = await core.presence.members(principal, params.channel, {
          clientId: query.clientId,
          connectionId: query.connectionId,
          limit: limit + 1,
          after: query.cursor || undefined,
        })
        const bin = binaryAllowed(negotiate(request, query))
        return presencePage(request, query, pageOf(members, limit, memberPosition), (m) => presenceToWire(m, bin))
      },
      {
        auth: true,
        params: M.ChannelParam,
        query: M.PresenceParams,
        response: { 200: t.Array(M.PresenceOut) },
        detail: { summary: 'Current presence members' },
      },
    )

    .get(
      '/channels/:channel/presence/history',
      async ({ request, query, params, principal }) => {
        const hq = historyQuery(query)
        const history = await core.presence.history(principal, params.channel, { ...hq, limit: hq.limit + 1 })
        const bin = binaryAllowed(negotiate(request, query))
        return presenceHistoryPage(
          request,
          query,
          pageOf(history, hq.limit, (m) => m.id),
          (m) => presenceToWire(m, bin),
        )
      },
      {
        auth: true,
        params: M.ChannelParam,
        query: M.HistoryParams,
        response: { 200: t.Array(M.PresenceOut) },
        detail: { summary: 'Presence history (paginated)' },
      },
    )

    .get(
      '/channels/:channel',
      async ({ request, query, params, principal }) =>
        respond(request, query, await core.channels.details(principal, params.channel)),
      {
        auth: true,
        params: M.ChannelParam,
        query: M.AnyQuery,
        response: { 200: M.ChannelDetails },
        detail: { summary: 'Channel details with occupancy' },
      },
    )

    .get(
      '/channels',
      async ({ request, query, principal }) => {
        const limit = intParam(query, 'limit', 100, 1, 1000)
        if (query.by !== undefined && query.by !== 'id' && query.by !== 'value')
          throw new GatewayError(40003, 'Invalid by param: must be id or value')
        const page = pageOf(
          await core.channels.list(principal, query.prefix ?? '', query.cursor || undefined, limit),
          limit,
          (n) => n,
        )
        if (query.by !== 'value') return channelsPage(request, query, page)
        const details = await Promise.all(page.items.map((n) => core.channels.details(principal, n)))
        return channelsPage(request, query, { items: details, next: page.next })
      },
      {
        auth: true,
        query: M.ChannelListParams,
        response: { 200: M.ChannelList },
        detail: { summary: 'Enumerate active channels' },
      },
    )

    .post(
      '/messages',
      async ({ request, query, body, principal }) => {
        const results = await core.batches.publish(principal, body)
        const version = protocolVersion(request, query)
        return respond(request, query, batchPublishToWire(results, version), { status: 201 })
      },
      {
        auth: true,
        query: M.AnyQuery,
        body: M.BatchBody,
        response: {
          201: t.Union([
            t.Array(M.BatchResult, { description: 'one BatchResult per batch spec (protocol version 3 and later)' }),
            t.Array(t.Record(t.String(), t.Unknown()), {
              description: 'versions 1 and 2: one {channel, messageId} or {channel, error} per channel',
            }),
          ]),
        },
        detail: { summary: 'Batch publish to several channels' },
      },
    )

    .get(
      '/presence',
      async ({ request, query, principal }) => {
        if (!query.channels) throw new GatewayError(40003, 'Missing channels param')
        const result = await core.batches.presence(principal, query.channels.split(query.separator || ','))
        const bin = binaryAllowed(negotiate(request, query))
        for (const r of result.results)
          if ('presence' in r) (r as { presence: unknown[] }).presence = r.presence.map((m) => presenceToWire(m, bin))
        return respond(request, query, result)
      },
      {
        auth: true,
        query: M.BatchPresenceParams,
        response: { 200: M.BatchResult },
        detail: { summary: 'Batch presence of several channels' },
      },
    )

    .get(
      '/stats',
      async ({ request, query, principal }) => {
        if (!principal.capability.allowsAnywhere('stats'))
          throw new GatewayError(40160, 'Stats require the stats capability on "*"')
        const { items, next } = await core.stats.page({ appId: principal.appId }, statsQuery(query, core.clock.now()))
        return statsPage(request, query, { items, next: next === undefined ? undefined : String(next) })
      },
      { auth: true, query: M.StatsParams, response: { 200: M.StatsList }, detail: { summary: 'App statistics' } },
    )

    .get('/time', ({ request, query }) => respond(request, query, [core.clock.now()]), {
      query: M.AnyQuery,
      response: { 200: M.ServerTime },
      detail: { summary: 'Server time' },
    })

    .post(
      '/keys/:keyName/revokeTokens',
      async ({ request, query, params, body, principal }) =>
        respond(request, query, await core.revocations.revoke(principal, params.keyName, body), {
          status: 201,
        }),
      {
        auth: true,
        params: M.KeyNameParam,
        query: M.AnyQuery,
        body: M.RevokeTokensBody,
        response: { 201: M.RevokeTokensResult },
        detail: { summary: 'Revoke tokens of a key with revocable tokens (Basic auth with that key)' },
      },
    )

    .post(
      '/keys/:keyName/requestToken',
      async ({ request, query, params, body }) => {
        const principal = () => core.auth.authenticate(credentialsOf(request, query))
        const details = await core.tokens.request(params.keyName, (body ?? {}) as Record<string, unknown>, principal)
        return respond(request, query, details)
      },
      {
        params: M.KeyNameParam,
        query: M.AnyQuery,
        body: M.TokenRequestBody,
        response: { 200: M.TokenDetails },
        detail: { summary: 'Request a token (signed TokenRequest or Basic auth)' },
      },
    )
    .use(messageRoutes(core))
    .use(annotationRoutes(core))
