import { GatewayError, denied } from '../../errors'
import type { Principal } from '../auth/principal'
import { authorize } from '../auth/authorize'
import type { Limits } from '../limits/limits'
import { IdGenerator } from '../model/ids'
import { checkChannelName } from '../model/names'
import { parseSerial } from '../model/serial'
import { qualifierOf } from '../model/sub-channels'
import type { Broker, Clock, Timers } from '../ports'
import type { Message } from '../types'
import type { Namespaces } from '../control/namespaces'
import { annotationEntry, summaryEntry } from './annotation-entries'
import { SummarySender } from './summary-sender'
import { clipSummary } from './summary-clip'
import {
  MAX_ANNOTATION_FIELDS,
  MAX_ANNOTATION_LOG,
  annotationFromWire,
  stateOp,
  summaryOf,
  undoOp,
} from './annotations'
import {
  TooManyAnnotations,
  type Annotation,
  type AnnotationStateOp,
  type AnnotationStore,
  type AnnotationSummary,
  type LiveOnlyKind,
} from './ports'

/** Annotations one request or protocol message may carry. */
export const MAX_ANNOTATIONS_PER_PUBLISH = 100

const EPHEMERAL = { persisted: false, ephemeral: true } as const

/** Bounds of summaries (settings). */
export interface SummarySettings {
  /** Largest summary sent or read, as JSON bytes: client lists are clipped to fit (summary-clip.ts). */
  annotationSummaryMaxBytes: number
  /** A message's summary goes out at most once per this many ms per node (changes in between are coalesced). */
  annotationSummaryIntervalMs: number
}

/**
 * Annotations of channel messages (REST and realtime): each changes its message's summary state
 * (the annotation store, which may refuse it: then nothing else happens), is delivered live to the
 * channel's annotation subscribers (an `annotation` entry), recorded in its message's list, and
 * followed by the message's summary (a `summary` entry, to every subscriber; coalesced per message
 * and clipped to a size, see SummarySender and summary-clip.ts). Summaries and annotations outlive
 * the log for the persisted retention, on every backend.
 */
export class AnnotationService {
  private readonly ids = new IdGenerator()
  private readonly summaries: SummarySender

  constructor(
    private readonly broker: Broker,
    private readonly store: AnnotationStore,
    private readonly namespaces: Namespaces,
    private readonly limits: Limits,
    private readonly clock: Clock,
    timers: Timers,
    private readonly maxMessageSize: number,
    private readonly s: SummarySettings,
  ) {
    this.summaries = new SummarySender(clock, timers, s.annotationSummaryIntervalMs)
  }

  /**
   * Publishes annotations of one message (`messageSerial`, the REST path's) or of the messages
   * each names (realtime); one at a time, in order. Returns their serials.
   */
  async publish(
    p: Principal,
    channelName: string,
    messageSerial: string | undefined,
    input: unknown,
    connectionId?: string,
  ): Promise<string[]> {
    const channel = checkChannelName(channelName)
    // the chat room channel's reactions are the chat store's, published through the Chat REST API
    if (qualifierOf(channel) === 'chat')
      throw denied(
        `Channel "${channel}" takes annotations (message reactions) only from the Chat REST API (/chat/v4/rooms/{room}/messages/{serial}/reactions)`,
      )
    authorize(p, channel, 'annotation-publish')
    if (!(await this.namespaces.isMutable(p.appId, channel)))
      throw new GatewayError(
        93002,
        `Channel "${channel}": annotations need the mutableMessages rule on its namespace (message annotations, updates, deletes and appends)`,
      )
    const items = Array.isArray(input) ? input : [input]
    if (items.length === 0) throw new GatewayError(40001, 'Invalid annotation request: no annotations')
    if (items.length > MAX_ANNOTATIONS_PER_PUBLISH)
      throw new GatewayError(40003, `Invalid annotation request: more than ${MAX_ANNOTATIONS_PER_PUBLISH} annotations`)
    const parsed = items.map((i) => annotationFromWire(i, p, messageSerial, this.maxMessageSize))
    const ops = parsed.map(stateOp)
    await this.limits.take(p.accountId, 'messages', parsed.length)
    const serials: string[] = []
    for (let i = 0; i < parsed.length; i++) {
      const a = parsed[i]!
      if (!a.id) a.id = `${this.ids.next()}:0`
      serials.push(await this.publishOne(p.appId, channel, a, ops[i], connectionId))
    }
    return serials
  }

  /**
   * One annotation: its change of the summary state first (a refusal stops it there: nothing is
   * delivered), then its delivery (a delivery that fails takes the change back), its record in the
   * message's list and the message's summary (not awaited: summaries of a message are coalesced).
   */
  private async publishOne(
    appId: string,
    channel: string,
    a: Omit<Annotation, 'serial' | 'timestamp'>,
    op: AnnotationStateOp | undefined,
    connectionId: string | undefined,
  ): Promise<string> {
    let before: string | undefined
    if (op) {
      try {
        before = (await this.store.change(appId, channel, a.messageSerial, op, MAX_ANNOTATION_FIELDS, this.clock.now()))
          .before
      } catch (e) {
        if (e instanceof TooManyAnnotations)
          throw new GatewayError(
            40003,
            `Message "${a.messageSerial}" has the most annotation entries allowed (${MAX_ANNOTATION_FIELDS})`,
          )
        throw e
      }
    }
    let serial: string
    try {
      serial = (await this.broker.publish(appId, channel, [annotationEntry(a, connectionId)], EPHEMERAL)).serials[0]!
    } catch (e) {
      if (op)
        await this.store
          .change(appId, channel, a.messageSerial, undoOp(op, before), Number.MAX_SAFE_INTEGER, this.clock.now())
          .catch(() => undefined)
      throw e
    }
    const record: Annotation = { ...a, serial, timestamp: parseSerial(serial)?.ms ?? this.clock.now() }
    await Promise.all([
      this.store.record(appId, channel, record, MAX_ANNOTATION_LOG),
      this.marked(appId, channel, 'annotation', serial),
    ])
    if (op)
      void this.summarizeCurrent(appId, channel, a.messageSerial, async () =>
        summaryOf((await this.store.current(appId, channel, a.messageSerial)).state),
      )
    return serial
  }

  /** Delivers a message's summary to the channel's subscribers. */
  private async summarize(appId: string, channel: string, messageSerial: string, summary: AnnotationSummary) {
    const { serials } = await this.broker.publish(
      appId,
      channel,
      [summaryEntry(`${this.ids.next()}:0`, { messageSerial, summary })],
      EPHEMERAL,
    )
    await this.marked(appId, channel, 'summary', serials[0]!)
  }

  /**
   * Notes a live-only entry the channel delivered (AnnotationStore.mark), for `missedSince`. A
   * store that fails it fails nothing else: the entry went out, and only a resume elsewhere reads it.
   */
  private marked(appId: string, channel: string, kind: LiveOnlyKind, serial: string): Promise<void> {
    return this.store.mark(appId, channel, kind, serial, this.clock.now()).catch(() => undefined)
  }

  /**
   * Whether the channel delivered a live-only entry of one of `kinds` after `position` (a
   * channelSerial the client received): what a resume that finds nothing kept of the connection
   * (it dropped on another node, or this one restarted) cannot give back, and tells the client of
   * (80020). Read before the resumed subscription starts, so an entry it receives live is not
   * counted; one delivered between the read and that start, or whose mark is still being written,
   * goes unseen (a few milliseconds).
   */
  async missedSince(appId: string, channel: string, position: string, kinds: LiveOnlyKind[]): Promise<boolean> {
    if (!kinds.length) return false
    const marks = await this.store.marks(appId, channel)
    return kinds.some((k) => (marks[k] ?? '') > position)
  }

  /**
   * Sends the message's summary after a change (see SummarySender: coalesced, ending on the
   * current state), clipped to its size bound. Settles once a summary read after the change went
   * out (or failed to); callers need not wait.
   */
  summarizeCurrent(
    appId: string,
    channel: string,
    messageSerial: string,
    read: () => Promise<AnnotationSummary>,
  ): Promise<void> {
    return this.summaries.send(
      `${appId}\u0000${channel}\u0000${messageSerial}`,
      async () => this.clip(await read()),
      (summary) => this.summarize(appId, channel, messageSerial, summary),
    )
  }

  /** A summary within ANNOTATION_SUMMARY_MAX_BYTES (client lists clipped first, see summary-clip.ts). */
  clip<T extends object>(summary: T): T {
    return clipSummary(summary, this.s.annotationSummaryMaxBytes)
  }

  /**
   * Whether the channel may carry annotations and summaries (a `mutableMessages` namespace, or a
   * chat room's channel, whose message reactions are announced on it); true while its app's rules
   * are not cached (it cannot be told without waiting for them).
   */
  mayCarry(appId: string, channel: string): boolean {
    return qualifierOf(channel) === 'chat' || (this.namespaces.mutableCached(appId, channel) ?? true)
  }

  /** Delivers an annotation recorded elsewhere (chat reactions) to the channel's annotation subscribers. */
  async announce(appId: string, channel: string, a: Omit<Annotation, 'id' | 'serial' | 'timestamp'>): Promise<string> {
    const { serials } = await this.broker.publish(
      appId,
      channel,
      [annotationEntry({ ...a, id: `${this.ids.next()}:0` })],
      EPHEMERAL,
    )
    await this.marked(appId, channel, 'annotation', serials[0]!)
    return serials[0]!
  }

  /** A message's annotations, oldest first; `cursor` is the position after the previous page. */
  async list(
    p: Principal,
    channelName: string,
    messageSerial: string,
    q: { limit: number; cursor?: string },
  ): Promise<{ items: Annotation[]; next?: string }> {
    const channel = checkChannelName(channelName)
    authorize(p, channel, 'history')
    await this.limits.take(p.accountId, 'history')
    const offset = q.cursor === undefined ? 0 : Number(q.cursor)
    if (!Number.isInteger(offset) || offset < 0 || offset > MAX_ANNOTATION_LOG)
      throw new GatewayError(40003, 'Invalid cursor param')
    const items = await this.store.list(p.appId, channel, messageSerial, offset, q.limit + 1)
    const page = items.slice(0, q.limit)
    return { items: page, next: items.length > q.limit ? String(offset + q.limit) : undefined }
  }

  /**
   * Messages read (history, one message) with their summaries, on channels whose namespace takes
   * annotations (mutableMessages: no other channel has any, so no other read pays a lookup).
   */
  async withSummaries(appId: string, channel: string, messages: Message[]): Promise<Message[]> {
    if (!messages.length || !(await this.namespaces.isMutable(appId, channel))) return messages
    const states = await this.store.states(
      appId,
      channel,
      messages.map((m) => m.serial),
    )
    if (!states.size) return messages
    return messages.map((m) => {
      const state = states.get(m.serial)
      return state ? { ...m, annotations: { summary: this.clip(summaryOf(state)) } } : m
    })
  }
}
