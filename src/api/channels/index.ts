import { Elysia } from 'elysia'
import type { Core } from '../../core'
import { GatewayError } from '../../errors'
import { authPlugin, credentialsOf } from '../plugins/auth'
import { binaryAllowed, negotiate, respond, type Query } from '../plugins/codec'
import { historyQuery, intParam, pageLinks, pageOf, statsQuery } from '../params'
import * as M from './model'
import { messageToWire, presenceToWire } from './wire'

/** The channel REST interface (base `{base_url}`). Routes destructure the request and call the core. */
export const channelRoutes = (core: Core) =>
  new Elysia({ name: 'channels', normalize: false })
    .use(authPlugin(core))
    .post('/channels/:channel/messages', async ({ request, query, params, body, principal }) =>
      respond(request, query as Query, await core.channels.publish(principal, params.channel, body), { status: 201 }),
    { auth: true, params: M.ChannelParam, query: M.AnyQuery, body: M.PublishBody, detail: { summary: 'Publish one or more messages' } })

    .get('/channels/:channel/messages', async ({ request, query, params, principal }) => {
      const q = query as Query
      const hq = historyQuery(q)
      const { page, next } = pageOf(await core.channels.history(principal, params.channel, { ...hq, limit: hq.limit + 1 }), hq.limit, (m) => m.serial)
      const bin = binaryAllowed(negotiate(request, q))
      return respond(request, q, page.map((m) => messageToWire(m, bin)), { links: pageLinks('messages', q, next) })
    }, { auth: true, params: M.ChannelParam, query: M.HistoryParams, detail: { summary: 'Message history (paginated)' } })

    .get('/channels/:channel/presence', async ({ request, query, params, principal }) => {
      const q = query as Query
      const limit = intParam(q, 'limit', 100, 1, 1000)
      const members = await core.channels.presenceMembers(principal, params.channel, { clientId: q.clientId, connectionId: q.connectionId, limit })
      const bin = binaryAllowed(negotiate(request, q))
      return respond(request, q, members.map((m) => presenceToWire(m, bin)), { links: pageLinks('presence', q, undefined) })
    }, { auth: true, params: M.ChannelParam, query: M.PresenceParams, detail: { summary: 'Current presence members' } })

    .get('/channels/:channel/presence/history', async ({ request, query, params, principal }) => {
      const q = query as Query
      const hq = historyQuery(q)
      const { page, next } = pageOf(await core.channels.presenceHistory(principal, params.channel, { ...hq, limit: hq.limit + 1 }), hq.limit, (m) => m.id)
      const bin = binaryAllowed(negotiate(request, q))
      return respond(request, q, page.map((m) => presenceToWire(m, bin)), { links: pageLinks('history', q, next) })
    }, { auth: true, params: M.ChannelParam, query: M.HistoryParams, detail: { summary: 'Presence history (paginated)' } })

    .get('/channels/:channel', async ({ request, query, params, principal }) =>
      respond(request, query as Query, await core.channels.details(principal, params.channel)),
    { auth: true, params: M.ChannelParam, query: M.AnyQuery, detail: { summary: 'Channel details with occupancy' } })

    .get('/channels', async ({ request, query, principal }) => {
      const q = query as Query
      const limit = intParam(q, 'limit', 100, 1, 1000)
      if (q.by !== undefined && q.by !== 'id' && q.by !== 'value') throw new GatewayError(40003, 'Invalid by param: must be id or value')
      const { page, next } = pageOf(await core.channels.list(principal, q.prefix ?? '', q.cursor || undefined, limit), limit, (n) => n)
      const body = q.by === 'value' ? await Promise.all(page.map((n) => core.channels.details(principal, n))) : page
      return respond(request, q, body, { links: pageLinks('channels', q, next) })
    }, { auth: true, query: M.ChannelListParams, detail: { summary: 'Enumerate active channels' } })

    .post('/messages', async ({ request, query, body, principal }) =>
      respond(request, query as Query, await core.channels.batchPublish(principal, body), { status: 201 }),
    { auth: true, query: M.AnyQuery, body: M.BatchBody, detail: { summary: 'Batch publish to several channels' } })

    .get('/presence', async ({ request, query, principal }) => {
      const q = query as Query
      if (!q.channels) throw new GatewayError(40003, 'Missing channels param')
      const result = await core.channels.batchPresence(principal, q.channels.split(q.separator || ','))
      const bin = binaryAllowed(negotiate(request, q))
      for (const r of result.results) if ('presence' in r) (r as { presence: unknown[] }).presence = r.presence.map((m) => presenceToWire(m, bin))
      return respond(request, q, result)
    }, { auth: true, query: M.BatchPresenceParams, detail: { summary: 'Batch presence of several channels' } })

    .get('/stats', async ({ request, query, principal }) => {
      const q = query as Query
      if (!principal.capability.allowsAnywhere('stats')) throw new GatewayError(40160, 'Stats require the stats capability on "*"')
      const { items, next } = await core.stats.page({ appId: principal.appId }, statsQuery(q, core.clock.now()))
      return respond(request, q, items, { links: pageLinks('stats', q, next === undefined ? undefined : { cursor: String(next) }) })
    }, { auth: true, query: M.StatsParams, detail: { summary: 'App statistics' } })

    .get('/time', ({ request, query }) => respond(request, query as Query, [core.clock.now()]), { query: M.AnyQuery, detail: { summary: 'Server time' } })

    .post('/keys/:keyName/requestToken', async ({ request, query, params, body }) => {
      const q = query as Query
      const principal = () => core.auth.authenticate(credentialsOf(request, q))
      const details = await core.tokens.request(params.keyName, (body ?? {}) as Record<string, unknown>, principal)
      return respond(request, q, details)
    }, { params: M.KeyNameParam, query: M.AnyQuery, body: M.TokenRequestBody, detail: { summary: 'Request a token (signed TokenRequest or Basic auth)' } })
