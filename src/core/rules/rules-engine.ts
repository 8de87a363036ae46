import { toBase64 } from '../../lib/encoding'
import { parseSerial } from '../model/serial'
import type { Clock, ControlStore, QueueBroker, QueueStore } from '../ports'
import type { Message, MessageDraft, PresenceMessage, Queue, Rule } from '../types'
import { compileChannelFilter, type ChannelFilter } from '../control/channel-filter'
import { brokerQueue } from '../control/integrations'
import type { WebhookDispatcher } from './webhooks'

interface Compiled {
  rule: Rule
  /** Absent when the stored pattern no longer compiles (it then matches nothing). */
  filter?: ChannelFilter
}

/** An app's routing: its rules, its account (stats) and which rules each recent channel matches. */
interface AppRules {
  accountId: string
  rules: Compiled[]
  matches: Map<string, Compiled[]>
}

/** The `site` of envelopes (the hosted service names its data centre there). */
const SITE = 'local'

/** Channels whose matching rules an app remembers (oldest forgotten first). */
const MATCH_CACHE = 10_000

/** A cached load: the promise every caller awaits (so they resume in arrival order) and its value once known. */
interface Cached<T> {
  promise: Promise<T>
  value?: T
}

/** Data and encoding in their JSON wire form (binary data base64-encoded). */
function putData(out: Record<string, unknown>, data: string | Uint8Array | undefined, encoding: string | undefined) {
  if (data instanceof Uint8Array) {
    out.data = toBase64(data)
    out.encoding = encoding ? `${encoding}/base64` : 'base64'
  } else {
    if (data !== undefined) out.data = data
    if (encoding) out.encoding = encoding
  }
}

/** The wire form of a message as rules deliver it. */
function wire(m: Message): Record<string, unknown> {
  const out: Record<string, unknown> = { id: m.id, serial: m.serial, timestamp: m.timestamp }
  if (m.name !== undefined) out.name = m.name
  if (m.clientId !== undefined) out.clientId = m.clientId
  if (m.extras !== undefined) out.extras = m.extras
  putData(out, m.data, m.encoding)
  return out
}

/** The wire form of a presence event as rules deliver it (the action as its number, 2 = enter). */
function presenceWire(e: PresenceMessage): Record<string, unknown> {
  const out: Record<string, unknown> = {
    id: e.id,
    action: e.action,
    clientId: e.clientId,
    connectionId: e.connectionId,
    timestamp: e.timestamp,
  }
  if (e.extras !== undefined) out.extras = e.extras
  putData(out, e.data, e.encoding)
  return out
}

type Source = Rule['source']['type']
/** The envelope field that carries the items of each source (as the hosted service names it). */
const ITEMS_FIELD: Record<Source, string> = { 'channel.message': 'messages', 'channel.presence': 'presence' }

/**
 * Integration rules: after a publish is acknowledged, messages of channels matching an enabled
 * rule's `channelFilter` go to its webhook (http) or into one of the app's queues (amqp). The
 * rules of an app are cached until they change; an app without rules costs one map lookup, and
 * which rules a channel matches is remembered, so a publish runs no pattern on a channel seen
 * recently (filters are RE2, linear in time: see control/channel-filter.ts).
 * Publishes are routed in the order they were acknowledged: callers share one pending load of
 * an app's rules and queues, so a later publish never overtakes an earlier one waiting for it.
 */
export class RulesEngine {
  private cache = new Map<string, Cached<AppRules>>()
  private queuesCache = new Map<string, Cached<Map<string, Queue>>>()

  constructor(
    private readonly control: ControlStore,
    private readonly queues: QueueStore,
    private readonly webhooks: WebhookDispatcher,
    private readonly clock: Clock,
    private readonly onError: (e: unknown) => void,
    /** Queues on an AMQP broker: amqp rules hand it the hosted service's envelopes instead of pushing into `queues`. */
    private readonly broker?: QueueBroker,
  ) {
    control.onChange((e) => {
      if (e.kind === 'rule' || e.kind === 'queue' || e.kind === 'app') {
        if (e.appId) {
          this.cache.delete(e.appId)
          this.queuesCache.delete(e.appId)
        } else {
          this.cache.clear()
          this.queuesCache.clear()
        }
        if (e.kind !== 'queue') for (const appId of e.appId ? [e.appId] : webhooks.apps()) this.refreshLanes(appId)
      }
    })
  }

  /** Drops the webhook lanes of the app's deleted or disabled rules at once (not at its next publish). */
  private refreshLanes(appId: string) {
    this.control.listRules(appId).then((rules) => this.webhooks.retain(appId, rules), this.onError)
  }

  /** Called after every acknowledged publish; never throws and never makes the publisher wait. */
  published(appId: string, channel: string, drafts: MessageDraft[], serials: string[]): void {
    if (this.cache.get(appId)?.value?.rules.length === 0) return
    const items = () =>
      drafts.map((d, i) =>
        wire({ ...d, serial: serials[i]!, timestamp: parseSerial(serials[i]!)?.ms ?? this.clock.now() }),
      )
    void this.route(appId, channel, 'channel.message', items).catch(this.onError)
  }

  /** Called after presence events entered a channel's log (on the node that appended them); never throws. */
  presenceChanged(appId: string, channel: string, events: PresenceMessage[]): void {
    if (this.cache.get(appId)?.value?.rules.length === 0) return
    // taken now: the events are the caller's and may change after it returns
    const items = events.map(presenceWire)
    void this.route(appId, channel, 'channel.presence', () => items).catch(this.onError)
  }

  private async route(appId: string, channel: string, source: Source, make: () => Array<Record<string, unknown>>) {
    const app = await this.cached(this.cache, appId, () => this.load(appId))
    let items: Array<Record<string, unknown>> | undefined
    for (const { rule } of this.matching(app, channel)) {
      if ((rule.source.type ?? 'channel.message') !== source) continue
      items ??= make()
      if (rule.ruleType === 'http') this.webhooks.enqueue(rule, app.accountId, channel, items)
      else {
        const queues = await this.cached(
          this.queuesCache,
          appId,
          async () => new Map((await this.control.listQueues(appId)).map((q) => [q.id, q])),
        )
        const q = queues.get(rule.target.queueId ?? '')
        if (q && this.broker) this.toBroker(this.broker, q, rule, app.accountId, channel, source, items)
        else if (q && source === 'channel.message')
          await this.queues.push(
            q.id,
            items.map((message) => ({ channel, message })),
            q.maxLength,
            this.clock.now(),
          )
      }
    }
  }

  /**
   * The hosted service's envelope, one per message (`single`) or one per publish (`batch`). Its
   * AMQP message id (`<ruleId>:<first message id>`) is the same on a retry, so a consumer can
   * recognise an envelope delivered twice (deliveries into the broker are at least once).
   */
  private toBroker(
    broker: QueueBroker,
    q: Queue,
    rule: Rule,
    accountId: string,
    channel: string,
    source: Source,
    items: Array<Record<string, unknown>>,
  ) {
    const bq = brokerQueue(q)
    const headers = {
      'x-ably-envelope-appid': rule.appId,
      'x-ably-envelope-channel': channel,
      'x-ably-envelope-rule-id': rule.id,
      'x-ably-envelope-site': SITE,
      'x-ably-envelope-source': source,
      'x-ably-version': '1.2',
    }
    const groups = rule.requestMode === 'batch' ? [items] : items.map((m) => [m])
    for (const group of groups) {
      const envelope = { source, appId: rule.appId, channel, site: SITE, ruleId: rule.id, [ITEMS_FIELD[source]]: group }
      broker.send(bq, JSON.stringify(envelope), { accountId, messageId: `${rule.id}:${group[0]!.id}`, headers })
    }
  }

  private async load(appId: string): Promise<AppRules> {
    const [rules, app] = await Promise.all([this.control.listRules(appId), this.control.getApp(appId)])
    const compiled = rules.map((rule) => {
      try {
        return { rule, filter: compileChannelFilter(rule.source.channelFilter) }
      } catch (e) {
        this.onError(e)
        return { rule }
      }
    })
    return { accountId: app?.accountId ?? '', rules: compiled, matches: new Map() }
  }

  /** The enabled rules whose filter matches the channel, remembered per channel. */
  private matching(app: AppRules, channel: string): Compiled[] {
    let hit = app.matches.get(channel)
    if (hit) return hit
    hit = app.rules.filter((c) => c.rule.status === 'enabled' && c.filter?.test(channel))
    if (app.matches.size >= MATCH_CACHE) app.matches.delete(app.matches.keys().next().value!)
    app.matches.set(channel, hit)
    return hit
  }

  /** The cached load of an app, started once; a failed load is forgotten so the next publish retries. */
  private cached<T>(cache: Map<string, Cached<T>>, appId: string, load: () => Promise<T>): Promise<T> {
    const hit = cache.get(appId)
    if (hit) return hit.promise
    const entry: Cached<T> = { promise: load() }
    cache.set(appId, entry)
    entry.promise.then(
      (v) => {
        entry.value = v
      },
      () => {
        if (cache.get(appId) === entry) cache.delete(appId)
      },
    )
    return entry.promise
  }
}
