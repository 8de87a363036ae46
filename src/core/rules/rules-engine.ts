import { toBase64 } from '../../lib/encoding'
import { parseSerial } from '../channels/serial'
import type { Clock, ControlStore, QueueStore } from '../ports'
import type { Message, MessageDraft, Queue, Rule } from '../types'
import type { WebhookDispatcher } from './webhooks'

interface Compiled { rule: Rule; filter: RegExp }

/** A cached load: the promise every caller awaits (so they resume in arrival order) and its value once known. */
interface Cached<T> { promise: Promise<T>; value?: T }

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
 * Publishes are routed in the order they were acknowledged: callers share one pending load of
 * an app's rules and queues, so a later publish never overtakes an earlier one waiting for it.
 */
export class RulesEngine {
  private cache = new Map<string, Cached<Compiled[]>>()
  private queuesCache = new Map<string, Cached<Map<string, Queue>>>()

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
    if (this.cache.get(appId)?.value?.length === 0) return
    void this.route(appId, channel, drafts, serials).catch(this.onError)
  }

  private async route(appId: string, channel: string, drafts: MessageDraft[], serials: string[]) {
    const rules = await this.cached(this.cache, appId, async () =>
      (await this.control.listRules(appId)).map((rule) => ({ rule, filter: new RegExp(rule.source.channelFilter) })))
    let items: Array<Record<string, unknown>> | undefined
    for (const { rule, filter } of rules) {
      if (rule.status !== 'enabled' || !filter.test(channel)) continue
      items ??= drafts.map((d, i) => wire({ ...d, serial: serials[i]!, timestamp: parseSerial(serials[i]!)?.ms ?? this.clock.now() }))
      if (rule.ruleType === 'http') this.webhooks.enqueue(rule, channel, items)
      else {
        const queues = await this.cached(this.queuesCache, appId, async () => new Map((await this.control.listQueues(appId)).map((q) => [q.id, q])))
        const q = queues.get(rule.target.queueId ?? '')
        if (q) await this.queues.push(q.id, items.map((message) => ({ channel, message })), q.maxLength, this.clock.now())
      }
    }
  }

  /** The cached load of an app, started once; a failed load is forgotten so the next publish retries. */
  private cached<T>(cache: Map<string, Cached<T>>, appId: string, load: () => Promise<T>): Promise<T> {
    const hit = cache.get(appId)
    if (hit) return hit.promise
    const entry: Cached<T> = { promise: load() }
    cache.set(appId, entry)
    entry.promise.then((v) => { entry.value = v }, () => { if (cache.get(appId) === entry) cache.delete(appId) })
    return entry.promise
  }
}
