import { Elysia, t } from 'elysia'
import type { Core } from '../../core'
import type { Rule } from '../../core/types'
import { MAX_QUEUE_LENGTH, MAX_QUEUE_TTL_MINUTES, type QueueView } from '../../core/control/integrations'
import { noContent, respond } from '../http/responses'
import { managementAuth } from '../plugins/management-auth'
import { intParam } from '../http/query'
import * as M from './model'
import { AppParam } from './model'
import { NoContent } from '../schemas'

const ruleView = (r: Rule) => ({ ...r, version: '1.2', _links: { self: `/v1/apps/${r.appId}/rules/${r.id}` } })
const queueView = (q: QueueView) => ({
  id: q.id,
  appId: q.appId,
  name: q.name,
  region: q.region,
  ttl: q.ttl,
  maxLength: q.maxLength,
  state: 'Running',
  messages: q.messages ?? { ready: 0, unacknowledged: 0, total: 0 },
  amqp: q.amqp ?? { uri: null, queueName: `${q.appId}:${q.name}` },
  stats: { publishRate: null, deliveryRate: null, acknowledgementRate: null },
  deadletter: false,
  deadletterId: null,
})
const RuleParam = t.Object({ appId: t.String(), ruleId: t.String() })
const QueueParam = t.Object({ appId: t.String(), queueId: t.String() })
const RuleBody = t.Object(
  {
    ruleType: t.Optional(t.String({ description: 'http (webhook) | amqp (into an app queue)' })),
    requestMode: t.Optional(t.String({ description: 'single | batch' })),
    status: t.Optional(t.String({ description: 'enabled | disabled' })),
    source: t.Optional(
      t.Object(
        {
          channelFilter: t.Optional(t.String({ description: 'regular expression on channel names' })),
          type: t.Optional(
            t.String({ description: 'channel.message (default) | channel.presence (amqp rules on RabbitMQ)' }),
          ),
        },
        { additionalProperties: true },
      ),
    ),
    target: t.Optional(
      t.Object(
        {
          url: t.Optional(t.String()),
          queueId: t.Optional(t.String()),
          headers: t.Optional(t.Array(t.Object({ name: t.String(), value: t.String() }))),
        },
        { additionalProperties: true },
      ),
    ),
  },
  { additionalProperties: true },
)
const QueueBody = t.Object(
  {
    name: t.String({ maxLength: 64, description: '1-64 letters, digits, _ or -' }),
    ttl: t.Integer({ minimum: 1, maximum: MAX_QUEUE_TTL_MINUTES, description: 'minutes a message may wait' }),
    maxLength: t.Integer({
      minimum: 1,
      maximum: MAX_QUEUE_LENGTH,
      description: 'messages kept at most (oldest dropped)',
    }),
    region: t.Optional(t.String({ maxLength: 64, description: '1-64 letters, digits, _ or - (default local)' })),
  },
  { additionalProperties: true, examples: [{ name: 'orders', ttl: 60, maxLength: 10000 }] },
)

/** Management of rules and queues, and the HTTP consumer of queues (receive, acknowledge). */
export const integrationRoutes = (core: Core) => {
  const it = core.integrations
  return new Elysia({ name: 'integrations', prefix: '/v1', normalize: false })
    .use(managementAuth(core))
    .get(
      '/apps/:appId/rules',
      async ({ request, query, params, mp }) =>
        respond(request, query, (await it.listRules(mp, params.appId)).map(ruleView)),
      {
        capability: 'read:rule',
        params: AppParam,
        response: { 200: t.Array(M.RuleOut) },
        detail: { summary: 'List rules' },
      },
    )
    .post(
      '/apps/:appId/rules',
      async ({ request, query, params, body, mp }) =>
        respond(request, query, ruleView(await it.createRule(mp, params.appId, body as Record<string, unknown>)), {
          status: 201,
        }),
      {
        capability: 'write:rule',
        params: AppParam,
        body: RuleBody,
        response: { 201: M.RuleOut },
        detail: { summary: 'Create a rule (http webhook or amqp queue routing)' },
      },
    )
    .get(
      '/apps/:appId/rules/:ruleId',
      async ({ request, query, params, mp }) =>
        respond(request, query, ruleView(await it.rule(mp, params.appId, params.ruleId))),
      { capability: 'read:rule', params: RuleParam, response: { 200: M.RuleOut }, detail: { summary: 'Get a rule' } },
    )
    .patch(
      '/apps/:appId/rules/:ruleId',
      async ({ request, query, params, body, mp }) =>
        respond(
          request,
          query,
          ruleView(await it.updateRule(mp, params.appId, params.ruleId, body as Record<string, unknown>)),
        ),
      {
        capability: 'write:rule',
        params: RuleParam,
        body: RuleBody,
        response: { 200: M.RuleOut },
        detail: { summary: 'Update a rule' },
      },
    )
    .delete(
      '/apps/:appId/rules/:ruleId',
      async ({ request, params, mp }) => {
        await it.deleteRule(mp, params.appId, params.ruleId)
        return noContent(request)
      },
      {
        capability: 'write:rule',
        params: RuleParam,
        response: { 204: NoContent },
        detail: { summary: 'Delete a rule' },
      },
    )

    .get(
      '/apps/:appId/queues',
      async ({ request, query, params, mp }) =>
        respond(request, query, (await it.listQueues(mp, params.appId)).map(queueView)),
      {
        capability: 'read:queue',
        params: AppParam,
        response: { 200: t.Array(M.QueueOut) },
        detail: { summary: 'List queues with their live message counts' },
      },
    )
    .post(
      '/apps/:appId/queues',
      async ({ request, query, params, body, mp }) =>
        respond(request, query, queueView(await it.createQueue(mp, params.appId, body as Record<string, unknown>)), {
          status: 201,
        }),
      {
        capability: 'write:queue',
        params: AppParam,
        body: QueueBody,
        response: { 201: M.QueueOut },
        detail: { summary: 'Create a queue' },
      },
    )
    .delete(
      '/apps/:appId/queues/:queueId',
      async ({ request, params, mp }) => {
        await it.deleteQueue(mp, params.appId, params.queueId)
        return noContent(request)
      },
      {
        capability: 'write:queue',
        params: QueueParam,
        response: { 204: NoContent },
        detail: { summary: 'Delete a queue and its messages' },
      },
    )
    .post(
      '/apps/:appId/queues/:queueId/messages',
      async ({ request, query, params, mp }) => {
        const max = intParam(query, 'max', 10, 1, 1000)
        const visibility = intParam(query, 'visibilityTimeout', 30_000, 1000, 12 * 3_600_000)
        return respond(request, query, await it.receive(mp, params.appId, params.queueId, max, visibility))
      },
      {
        capability: 'read:queue',
        params: QueueParam,
        query: t.Object(
          {
            max: t.Optional(t.String({ description: 'messages to receive (1-1000, default 10)' })),
            visibilityTimeout: t.Optional(
              t.String({ description: 'ms a received message stays hidden unless acknowledged (default 30000)' }),
            ),
          },
          { additionalProperties: true },
        ),
        response: { 200: M.QueuedMessages },
        detail: {
          summary:
            'Receive messages: each is hidden until acknowledged or its visibility timeout passes (then it comes back)',
        },
      },
    )
    .post(
      '/apps/:appId/queues/:queueId/ack',
      async ({ request, query, params, body, mp }) =>
        respond(request, query, {
          acknowledged: await it.ack(
            mp,
            params.appId,
            params.queueId,
            (body as { deliveryTags?: unknown }).deliveryTags,
          ),
        }),
      {
        capability: 'write:queue',
        params: QueueParam,
        body: t.Object({ deliveryTags: t.Array(t.String()) }),
        response: { 200: M.Acknowledged },
        detail: { summary: 'Acknowledge received messages (removes them)' },
      },
    )
}
