import { GatewayError, notFound } from '../../errors'
import { randomId } from '../../lib/crypto'
import { compileChannelFilter, MAX_APP_FILTER_PROGRAM } from './channel-filter'
import { checkWebhookTarget } from './webhook-target'
import type { Clock, ControlStore, QueueStore } from '../ports'
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
    if (type !== 'channel.message') throw bad('source.type: only "channel.message" is supported')
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

  async listQueues(
    p: ManagementPrincipal,
    appId: string,
  ): Promise<Array<Queue & { messages: { ready: number; unacknowledged: number; total: number } }>> {
    await this.mgmt.app(p, appId)
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

  async createQueue(p: ManagementPrincipal, appId: string, input: Record<string, unknown>): Promise<Queue> {
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
    await this.control.putQueue(q)
    return q
  }

  async deleteQueue(p: ManagementPrincipal, appId: string, id: string): Promise<void> {
    await this.queue(p, appId, id)
    await this.control.deleteQueue(appId, id)
    await this.queues.drop(id)
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
    return this.queues.receive(q.id, max, visibilityMs, q.ttl * 60_000, this.clock.now())
  }

  async ack(p: ManagementPrincipal, appId: string, id: string, tags: unknown): Promise<number> {
    const q = await this.queue(p, appId, id)
    if (!Array.isArray(tags) || !tags.every((t) => typeof t === 'string'))
      throw bad('deliveryTags must be an array of strings')
    return this.queues.ack(q.id, tags as string[])
  }
}
