import { toBase64 } from '../../lib/encoding'
import { parseSerial } from '../channels/serial'
import type { Clock, ControlStore, QueueStore } from '../ports'
import type { Message, MessageDraft, Queue, Rule } from '../types'
import type { WebhookDispatcher } from './webhooks'

interface Compiled { rule: Rule; filter: RegExp }

/** The wire form of a message as rules deliver it (JSON: binary data base64-encoded). */
function wire(m: Message): Record<string, unknown> {
  const out: Record<string, unknown> = { id: m.id, serial: m.serial, timestamp: m.timestamp }
  if (m.name !== undefined) out.name = m.name
  if (m.clientId !== undefined) out.clientId = m.clientId
  if (m.extras !== undefined) out.extras = m.extras
  if (m.data instanceof Uint8Array) {
    out.data = toBase64(m.data)
    out.encoding = m.encoding ? `${m.encoding}/base64` : 'base64'
  } else {
    if (m.data !== undefined) out.data = m.data
    if (m.encoding) out.encoding = m.encoding
  }
  return out
}

/**
 * Integration rules: after a publish is acknowledged, messages of channels matching an enabled
 * rule's `channelFilter` go to its webhook (http) or into one of the app's queues (amqp). The
 * rules of an app are cached until they change; an app without rules costs one map lookup.
 */
export class RulesEngine {
  private cache = new Map<string, Compiled[]>()
  private queuesCache = new Map<string, Map<string, Queue>>()

  constructor(
    private readonly control: ControlStore,
    private readonly queues: QueueStore,
    private readonly webhooks: WebhookDispatcher,
    private readonly clock: Clock,
    private readonly onError: (e: unknown) => void,
  ) {
    control.onChange((e) => {
      if (e.kind === 'rule' || e.kind === 'queue' || e.kind === 'app') {
        if (e.appId) { this.cache.delete(e.appId); this.queuesCache.delete(e.appId) } else { this.cache.clear(); this.queuesCache.clear() }
      }
    })
  }

  /** Called after every acknowledged publish; never throws and never makes the publisher wait. */
  published(appId: string, channel: string, drafts: MessageDraft[], serials: string[]): void {
    const rules = this.cache.get(appId)
    if (rules && rules.length === 0) return
    void this.route(appId, channel, drafts, serials, rules).catch(this.onError)
  }

  private async route(appId: string, channel: string, drafts: MessageDraft[], serials: string[], cached: Compiled[] | undefined) {
    const rules = cached ?? (await this.load(appId))
    let items: Array<Record<string, unknown>> | undefined
    for (const { rule, filter } of rules) {
      if (rule.status !== 'enabled' || !filter.test(channel)) continue
      items ??= drafts.map((d, i) => wire({ ...d, serial: serials[i]!, timestamp: parseSerial(serials[i]!)?.ms ?? this.clock.now() }))
      if (rule.ruleType === 'http') this.webhooks.enqueue(rule, channel, items)
      else {
        const q = (this.queuesCache.get(appId) ?? (await this.loadQueues(appId))).get(rule.target.queueId ?? '')
        if (q) await this.queues.push(q.id, items.map((message) => ({ channel, message })), q.maxLength, this.clock.now())
      }
    }
  }

  private async load(appId: string): Promise<Compiled[]> {
    const compiled = (await this.control.listRules(appId)).map((rule) => ({ rule, filter: new RegExp(rule.source.channelFilter) }))
    this.cache.set(appId, compiled)
    return compiled
  }

  private async loadQueues(appId: string) {
    const m = new Map((await this.control.listQueues(appId)).map((q) => [q.id, q]))
    this.queuesCache.set(appId, m)
    return m
  }
}
