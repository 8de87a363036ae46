import { GatewayError, notFound } from '../../errors'
import { randomId } from '../../lib/crypto'
import { compileChannelFilter, MAX_APP_FILTER_PROGRAM } from './channel-filter'
import { checkWebhookTarget } from './webhook-target'
import type { BrokerQueue, Clock, ControlStore, QueueBroker, QueueStore } from '../ports'
import type { Queue, QueuedMessage, Rule } from '../types'
import type { Management, ManagementPrincipal } from './management'

const bad = (m: string) => new GatewayError(40000, m)
const obj = (v: unknown): Record<string, unknown> =>
  v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {}
const posInt = (v: unknown, field: string, max: number) => {
  if (!Number.isInteger(v) || (v as number) <= 0 || (v as number) > max)
    throw bad(`${field} must be an integer from 1 to ${max}`)
  return v as number
}
const QUEUE_NAME = /^[A-Za-z0-9_-]{1,64}$/

/** Longest a queued message may wait (minutes): a day (the hosted service's default limit is an hour). */
export const MAX_QUEUE_TTL_MINUTES = 1440
/** Most messages one queue keeps (the hosted service's default limit is 10,000). */
export const MAX_QUEUE_LENGTH = 100_000

/** Rules one app may have: each can hold its own webhook buffer, and every filter runs on publishes. */
export const MAX_RULES_PER_APP = 50

/** A queue as the broker holds it: named `<appId>:<name>` as the hosted service names it. */
export const brokerQueue = (q: Queue): BrokerQueue => ({
  appId: q.appId,
  name: `${q.appId}:${q.name}`,
  ttlMs: q.ttl * 60_000,
  maxLength: q.maxLength,
})

export type QueueCounts = { ready: number; unacknowledged: number; total: number }
/** A queue with what the management API shows of it: live counts and, on a broker, how consumers reach it. */
export type QueueView = Queue & { messages?: QueueCounts; amqp?: { uri: string; queueName: string } }

/** What a broker call that failed answers (unless it failed with a GatewayError of its own). */
export const unreachableThrow = (e: unknown): never => {
  throw e instanceof GatewayError
    ? e
    : new GatewayError(50003, 'The queue broker (AMQP) cannot be reached; try again later')
}

export interface IntegrationSettings {
  /** Rule webhooks may target loopback, private and link-local addresses (tests, trusted setups). */
  webhookAllowPrivateTargets: boolean
}

/** Rules (webhooks, queue routing) and queues of an app, for the management interface. */
export class Integrations {
  constructor(
    private readonly mgmt: Management,
    private readonly control: ControlStore,
    private readonly queues: QueueStore,
    private readonly clock: Clock,
    private readonly s: IntegrationSettings,
    /** Queues on an AMQP broker (consumed over AMQP) instead of the QueueStore (consumed over HTTP). */
    private readonly broker?: QueueBroker,
  ) {}

  async listRules(p: ManagementPrincipal, appId: string): Promise<Rule[]> {
    await this.mgmt.app(p, appId)
    return this.control.listRules(appId)
  }

  async rule(p: ManagementPrincipal, appId: string, id: string): Promise<Rule> {
    const r = (await this.listRules(p, appId)).find((x) => x.id === id)
    if (!r) throw notFound(`Rule "${id}" not found`)
    return r
  }

  async createRule(p: ManagementPrincipal, appId: string, input: Record<string, unknown>): Promise<Rule> {
    await this.mgmt.app(p, appId)
    if ((await this.control.listRules(appId)).length >= MAX_RULES_PER_APP)
      throw bad(`An app may have at most ${MAX_RULES_PER_APP} rules`)
    const now = this.clock.now()
    const rule = await this.validate(
      appId,
      { id: randomId(6), appId, created: now, modified: now } as Rule,
      input,
      true,
    )
    await this.control.putRule(rule)
    return rule
  }

  async updateRule(p: ManagementPrincipal, appId: string, id: string, input: Record<string, unknown>): Promise<Rule> {
    const current = await this.rule(p, appId, id)
    const rule = await this.validate(appId, { ...current, modified: this.clock.now() }, input, false)
    await this.control.putRule(rule)
    return rule
  }

  async deleteRule(p: ManagementPrincipal, appId: string, id: string): Promise<void> {
    await this.rule(p, appId, id)
    await this.control.deleteRule(appId, id)
  }

  private async validate(appId: string, base: Rule, input: Record<string, unknown>, fresh: boolean): Promise<Rule> {
    const r: Rule = { ...base }
    const ruleType = input.ruleType ?? (fresh ? undefined : r.ruleType)
    if (ruleType !== 'http' && ruleType !== 'amqp') throw bad('ruleType must be "http" (webhook) or "amqp" (app queue)')
    r.ruleType = ruleType
    const mode = input.requestMode ?? (fresh ? 'single' : r.requestMode)
    if (mode !== 'single' && mode !== 'batch') throw bad('requestMode must be "single" or "batch"')
    r.requestMode = mode
    const status = input.status ?? (fresh ? 'enabled' : r.status)
    if (status !== 'enabled' && status !== 'disabled') throw bad('status must be "enabled" or "disabled"')
    r.status = status
    const source = { ...(fresh ? {} : r.source), ...obj(input.source) } as Record<string, unknown>
    const filter = source.channelFilter ?? ''
    if (typeof filter !== 'string') throw bad('source.channelFilter must be a string (regular expression)')
    await this.checkFilterBudget(appId, r.id, compileChannelFilter(filter).size)
    const type = source.type ?? 'channel.message'
    if (type !== 'channel.message' && type !== 'channel.presence')
      throw bad('source.type must be "channel.message" or "channel.presence"')
    if (type === 'channel.presence' && (r.ruleType !== 'amqp' || !this.broker))
      throw bad('source.type "channel.presence" is served only for amqp rules with queues on RabbitMQ (AMQP_URL)')
    r.source = { channelFilter: filter, type }
    const target = { ...(fresh ? {} : r.target), ...obj(input.target) } as Rule['target']
    if (r.ruleType === 'http') {
      const { url, headers } = checkWebhookTarget(target.url, target.headers, this.s.webhookAllowPrivateTargets)
      r.target = { url, headers, enveloped: target.enveloped !== false }
    } else {
      const queues = await this.control.listQueues(appId)
      const q = queues.find((x) => x.id === target.queueId || x.name === target.queueId)
      if (!q) throw bad('target.queueId must name a queue of this app')
      r.target = { queueId: q.id }
    }
    return r
  }

  /** The app's filters together must stay within MAX_APP_FILTER_PROGRAM (what routing one publish may cost). */
  private async checkFilterBudget(appId: string, ruleId: string, size: number) {
    let total = size
    for (const other of await this.control.listRules(appId)) {
      if (other.id === ruleId) continue
      try {
        total += compileChannelFilter(other.source.channelFilter).size
      } catch {
        // a stored filter that no longer compiles matches nothing and costs nothing
      }
    }
    if (total > MAX_APP_FILTER_PROGRAM)
      throw bad(
        `source.channelFilter: the app's channel filters together would compile to ${total} instructions, ` +
          `at most ${MAX_APP_FILTER_PROGRAM} are allowed`,
      )
  }

  async listQueues(p: ManagementPrincipal, appId: string): Promise<QueueView[]> {
    await this.mgmt.app(p, appId)
    const broker = this.broker
    if (broker) {
      const queues = await this.control.listQueues(appId)
      if (!queues.length) return []
      const uri = await broker.consumerUri(appId)
      return Promise.all(
        queues.map(async (q) => {
          const bq = brokerQueue(q)
          return { ...q, messages: await broker.counts(bq), amqp: { uri, queueName: bq.name } }
        }),
      )
    }
    const now = this.clock.now()
    return Promise.all(
      (await this.control.listQueues(appId)).map(async (q) => ({
        ...q,
        messages: await this.queues.counts(q.id, q.ttl * 60_000, now),
      })),
    )
  }

  async queue(p: ManagementPrincipal, appId: string, id: string): Promise<Queue> {
    await this.mgmt.app(p, appId)
    const q = (await this.control.listQueues(appId)).find((x) => x.id === id)
    if (!q) throw notFound(`Queue "${id}" not found`)
    return q
  }

  async createQueue(p: ManagementPrincipal, appId: string, input: Record<string, unknown>): Promise<QueueView> {
    await this.mgmt.app(p, appId)
    const name = input.name
    if (typeof name !== 'string' || !QUEUE_NAME.test(name)) throw bad('name must be 1-64 letters, digits, "_" or "-"')
    const region = input.region === undefined || input.region === null || input.region === '' ? 'local' : input.region
    if (typeof region !== 'string' || !QUEUE_NAME.test(region))
      throw bad('region must be 1-64 letters, digits, "_" or "-"')
    const q: Queue = {
      id: `${appId}:${region}:${name}`,
      appId,
      name,
      region,
      ttl: posInt(input.ttl, 'ttl (minutes)', MAX_QUEUE_TTL_MINUTES),
      maxLength: posInt(input.maxLength, 'maxLength', MAX_QUEUE_LENGTH),
      created: this.clock.now(),
    }
    if ((await this.control.listQueues(appId)).some((x) => x.name === name))
      throw new GatewayError(40900, `Queue "${name}" already exists`)
    if (this.broker) {
      // declared in the broker first: a queue the API lists always exists there
      const bq = brokerQueue(q)
      const uri = await this.broker.declare(bq).then(() => this.broker!.consumerUri(appId), unreachableThrow)
      await this.control.putQueue(q)
      return { ...q, amqp: { uri, queueName: bq.name } }
    }
    await this.control.putQueue(q)
    return q
  }

  async deleteQueue(p: ManagementPrincipal, appId: string, id: string): Promise<void> {
    const q = await this.queue(p, appId, id)
    // deleted in the broker first: a failure leaves the queue listed, so the delete can be retried
    if (this.broker) await this.broker.remove(brokerQueue(q)).catch(unreachableThrow)
    await this.control.deleteQueue(appId, id)
    if (!this.broker) await this.queues.drop(id)
  }

  /** The HTTP consumer exists only for queues of the QueueStore. */
  private httpConsumer() {
    if (this.broker)
      throw bad('Queues are consumed over AMQP on this server: connect to the amqp.uri of the queue record')
  }

  /** Hands out up to `max` messages, each hidden for `visibilityMs` unless acknowledged. */
  async receive(
    p: ManagementPrincipal,
    appId: string,
    id: string,
    max: number,
    visibilityMs: number,
  ): Promise<QueuedMessage[]> {
    const q = await this.queue(p, appId, id)
    this.httpConsumer()
    return this.queues.receive(q.id, max, visibilityMs, q.ttl * 60_000, this.clock.now())
  }

  async ack(p: ManagementPrincipal, appId: string, id: string, tags: unknown): Promise<number> {
    const q = await this.queue(p, appId, id)
    this.httpConsumer()
    if (!Array.isArray(tags) || !tags.every((t) => typeof t === 'string'))
      throw bad('deliveryTags must be an array of strings')
    return this.queues.ack(q.id, tags as string[])
  }
}
